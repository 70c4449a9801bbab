"""Ownership telemetry with ``workers=2``: the server process (the one owner of every status)
exports the records, including the ``running``/``grading`` the worker processes report; the
workers never export, so one server is one ``event_sequence``."""

from __future__ import annotations

from pathlib import Path

import pytest

from osmosis_ai.rollout.client import RolloutClient
from osmosis_ai.rollout.types import RolloutStatus
from osmosis_ai.testing import ScriptedPolicyServer

from ..otlp_collector import OtlpCollector
from .test_pool import _start, pool_server


async def test_records_come_from_the_server_process_for_rollouts_run_in_workers(
    monkeypatch: pytest.MonkeyPatch, osmosis_home: Path
) -> None:
    monkeypatch.setenv("OSMOSIS_ROLLOUT_SERVER_ID", "pool-server")
    monkeypatch.delenv("_OSMOSIS_ROLLOUT_NAME", raising=False)
    monkeypatch.delenv("OSMOSIS_ROLLOUT_NAMESPACE", raising=False)
    async with OtlpCollector().serving() as collector, ScriptedPolicyServer("multiply") as policy:
        monkeypatch.setenv("OSMOSIS_ROLLOUT_OTLP_ENDPOINT", collector.url)
        async with pool_server(monkeypatch) as (url, pool), RolloutClient(url=url) as client:
            run = {"osmosis_observability": {"run_id": "run-9"}}
            handles = [await _start(client, policy, f"w{i}", metadata=run) for i in range(4)]
            results = [await h for h in handles]
            worker_pids = {w.pid for w in pool.workers}
    assert all(r.status == RolloutStatus.SUCCESS for r in results)
    pids = {int(r.sample.metrics["pid"]) for r in results if r.sample is not None}
    assert pids <= worker_pids
    assert len(pids) == 2  # both workers ran rollouts
    for i in range(4):
        assert collector.statuses(f"w{i}") == ["queued", "running", "grading", "success"]
    assert {r.attributes["server_id"] for r in collector.records} == {"pool-server"}
    assert {r.attributes["run_id"] for r in collector.records} == {"run-9"}
    sequences = sorted(r.attributes["event_sequence"] for r in collector.records)
    assert sequences == list(range(1, 17))  # one exporter, in the server process
