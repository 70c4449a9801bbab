"""The worker pool end to end: a real server, two real worker processes that import the
rollout entrypoint, the scripted multiply policy, and ``RolloutClient`` polling."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from osmosis_ai.rollout.client import RolloutClient
from osmosis_ai.rollout.entrypoint import load_rollout_app
from osmosis_ai.rollout.server._impl.workers import (
    DEFAULT_WORKER_NICE,
    ENV_WORKER_NICE,
    WorkerSetupError,
    worker_nice,
)
from osmosis_ai.rollout.server._impl.workers.pool import WorkerPool, use_workers
from osmosis_ai.rollout.types import RolloutStatus
from osmosis_ai.testing import ScriptedPolicyServer, serve_app

from ..rollout_server_harness import body

ROLLOUT_DIR = Path(__file__).parent / "worker_rollout"
PROMPT = [{"role": "user", "content": "What is 6 * 7?"}]


@asynccontextmanager
async def pool_server(
    monkeypatch: pytest.MonkeyPatch, workers: int = 2, **env: str
) -> AsyncIterator[tuple[str, WorkerPool]]:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name, module in list(sys.modules.items()):  # a fresh app (and backend) per test
        if str(getattr(module, "__file__", "") or "").startswith(str(ROLLOUT_DIR)):
            del sys.modules[name]
    app = load_rollout_app(ROLLOUT_DIR, "main.py")
    pool = use_workers(app, workers)
    pool.deadline_grace_sec = 0.5
    async with serve_app(app, start_timeout_sec=300) as url:
        yield url, pool


async def _start(client: RolloutClient, policy: ScriptedPolicyServer, rid: str, **kw: Any) -> Any:
    return await client.run_rollout_async(
        PROMPT, policy.chat_completions_url(rid), rid, llm_api_key="k", label="42", **kw
    )


async def test_rollouts_run_in_worker_processes_with_context_artifacts_and_trajectories(
    monkeypatch: pytest.MonkeyPatch, osmosis_home: Path
) -> None:
    async with (
        ScriptedPolicyServer("multiply") as policy,
        pool_server(monkeypatch) as (url, pool),
        RolloutClient(url=url) as client,
    ):
        handles = [await _start(client, policy, f"r{i}") for i in range(6)]
        results = [await h for h in handles]
        worker_pids = {w.pid for w in pool.workers}
        calls = policy.requests_for("r0")
        niceness = {os.getpriority(os.PRIO_PROCESS, pid or 0) for pid in worker_pids}
    assert all(r.status == RolloutStatus.SUCCESS for r in results)
    assert all(r.sample is not None and r.sample.reward == 1.0 for r in results)
    pids = {int(r.sample.metrics["pid"]) for r in results if r.sample is not None}
    assert pids <= worker_pids
    assert os.getpid() not in pids
    assert len(pids) == 2  # least-loaded dispatch used both workers
    assert all(call.bearer_token == "k" for call in calls)
    assert (osmosis_home / "r0" / "trajectory.json").exists()  # written by the server
    assert (osmosis_home / "r0" / "artifacts" / "pid.txt").read_text() in {str(p) for p in pids}
    # The protocol process comes first: workers run at a lower CPU priority.
    assert niceness == {min(19, os.getpriority(os.PRIO_PROCESS, 0) + DEFAULT_WORKER_NICE)}


async def test_worker_niceness_is_a_server_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """``create_rollout_server(worker_nice=3)`` wins over the environment's niceness."""
    monkeypatch.setenv(ENV_WORKER_NICE, "9")
    async with pool_server(monkeypatch, WORKER_TEST_NICE="3") as (_, pool):
        niceness = {os.getpriority(os.PRIO_PROCESS, w.pid or 0) for w in pool.workers}
    assert niceness == {min(19, os.getpriority(os.PRIO_PROCESS, 0) + 3)}


async def test_worker_niceness_is_configurable_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_WORKER_NICE, "0")
    assert worker_nice() == 0
    monkeypatch.setenv(ENV_WORKER_NICE, "-5")  # raising priority needs privileges: refused
    with pytest.raises(WorkerSetupError, match="OSMOSIS_ROLLOUT_WORKER_NICE='-5' is not"):
        worker_nice()


async def test_a_0_3_8_backend_without_progress_runs_in_workers(
    monkeypatch: pytest.MonkeyPatch, osmosis_home: Path
) -> None:
    """``execute(request)`` (0.3.8) inside a worker: the worker enters the context and reports
    ``running`` first, as the server does in process; status set there reaches the server."""
    async with (
        ScriptedPolicyServer("multiply") as policy,
        pool_server(monkeypatch, WORKER_TEST_LEGACY="1") as (url, pool),
        RolloutClient(url=url) as client,
    ):
        handles = [await _start(client, policy, f"old{i}") for i in range(4)]
        results = [await h for h in handles]
        worker_pids = {w.pid for w in pool.workers}
        calls = [policy.requests_for(f"old{i}") for i in range(4)]
    assert [r.status for r in results] == [RolloutStatus.SUCCESS] * 4
    samples = [r.sample for r in results]
    assert all(s is not None and s.reward == 1.0 for s in samples)
    assert {int(s.metrics["pid"]) for s in samples if s is not None} <= worker_pids
    assert all(s is not None and s.metrics["running_at_call"] == 1.0 for s in samples)
    assert all(len(c) == 1 and c[0].bearer_token == "k" for c in calls)


async def test_cancel_queued_and_running_across_workers_and_429(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with (
        ScriptedPolicyServer("multiply") as policy,
        pool_server(monkeypatch, WORKER_TEST_MAX_CONCURRENCY="1", WORKER_TEST_MAX_QUEUE="1") as (
            url,
            pool,
        ),
        RolloutClient(url=url) as client,
        httpx.AsyncClient(base_url=url) as http,
    ):
        a = await _start(client, policy, "a", metadata={"sleep": 30})
        b = await _start(client, policy, "b", metadata={"sleep": 30})
        assert await a.wait_for_running() == RolloutStatus.RUNNING
        assert await b.wait_for_running() == RolloutStatus.RUNNING
        c = await _start(client, policy, "c")  # both workers busy: queued in the server
        full = await http.post("/rollout", json=body("d"))
        assert full.status_code == 429  # one slot per worker and a queue of one, all taken
        assert {w.load for w in pool.workers} == {1}
        assert (await client.cancel_rollout("c")).dispositions == {"c": "cancelled_queued"}
        assert (await client.cancel_rollout("a")).dispositions == {"a": "cancelled_running"}
        assert (await client.cancel_rollout("b")).dispositions == {"b": "cancelled_running"}
        results = [await a, await b, await c]
        after = await _start(client, policy, "after")
        final = await after
    assert [r.status for r in results] == [RolloutStatus.CANCELLED] * 3
    assert final.status == RolloutStatus.SUCCESS


async def test_sigkilled_worker_fails_its_rollouts_and_is_restarted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with (
        ScriptedPolicyServer("multiply") as policy,
        pool_server(monkeypatch) as (url, pool),
        RolloutClient(url=url) as client,
    ):
        slow = [await _start(client, policy, f"s{i}", metadata={"sleep": 1}) for i in range(4)]
        for handle in slow:
            assert await handle.wait_for_running() == RolloutStatus.RUNNING
        victim = pool.workers[0]
        victim_ids = set(victim.pending)
        os.kill(victim.pid or 0, signal.SIGKILL)
        results = {h.rollout_id: await h for h in slow}
        await pool.wait_for_restarts(1)
        again = [await _start(client, policy, f"t{i}") for i in range(4)]
        later = [await h for h in again]
    assert len(victim_ids) == 2
    for rid, result in results.items():
        if rid in victim_ids:
            assert (result.status, result.err_category) == (RolloutStatus.FAILURE, "internal_error")
            assert result.err_message is not None
            assert "killed by SIGKILL" in result.err_message
        else:
            assert result.status == RolloutStatus.SUCCESS
    assert all(r.status == RolloutStatus.SUCCESS for r in later)
    assert pool.workers[0].pid != victim.pid


async def test_worker_that_kills_itself_mid_rollout(monkeypatch: pytest.MonkeyPatch) -> None:
    async with (
        ScriptedPolicyServer("multiply") as policy,
        pool_server(monkeypatch) as (url, _pool),
        RolloutClient(url=url) as client,
    ):
        crashed = await (await _start(client, policy, "boom", metadata={"crash": True}))
        fine = await (await _start(client, policy, "fine"))
    assert (crashed.status, crashed.err_category) == (RolloutStatus.FAILURE, "internal_error")
    assert crashed.err_message is not None
    assert "worker" in crashed.err_message
    assert fine.status == RolloutStatus.SUCCESS


async def test_deadline_on_a_hung_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    async with (
        ScriptedPolicyServer("multiply") as policy,
        pool_server(monkeypatch) as (url, pool),
        RolloutClient(url=url) as client,
    ):
        hung = await _start(client, policy, "hung", metadata={"block": 60}, agent_timeout_sec=0.5)
        result = await hung
        await pool.wait_for_restarts(1)
        fine = await (await _start(client, policy, "fine"))
    assert (result.status, result.err_category) == (RolloutStatus.FAILURE, "timeout")
    assert result.err_message is not None
    assert "deadline" in result.err_message
    assert fine.status == RolloutStatus.SUCCESS
