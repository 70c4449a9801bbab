"""Rollout ownership telemetry (``OSMOSIS_ROLLOUT_OTLP_ENDPOINT``): osmosis-ai 0.3.8's OTLP log
records, sent by a real server to a real HTTP collector stand-in and decoded from their protobuf
body. Records reach the collector at the latest when the server shuts down (the batch is flushed),
so each test reads them after leaving the server's context."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from typing import Any

import httpx
import pytest

from osmosis_ai.rollout.context import RolloutProgress
from osmosis_ai.rollout.server._impl.entry import publish
from osmosis_ai.rollout.server._impl.ownership import (
    INSTALL_HINT,
    OtlpExtraMissing,
    telemetry_from_env,
)
from osmosis_ai.rollout.types import RolloutStatus

from .otlp_collector import OtlpCollector, closed_port_url
from .rollout_server_harness import FakeBackend, body, final_result, running

OWNER_ENV = {
    "OSMOSIS_ROLLOUT_SERVER_ID": "server-7",
    "_OSMOSIS_ROLLOUT_NAME": "multiply-prod",
    "OSMOSIS_ROLLOUT_NAMESPACE": "team-a",
}
ALL_ENV = (*OWNER_ENV, "_OSMOSIS_ROLLOUT_INSTANCE_ID", "OSMOSIS_ROLLOUT_OTLP_ENDPOINT")
RUN = {"osmosis_observability": {"run_id": "run-1", "run_name": "nightly multiply"}}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ALL_ENV:
        monkeypatch.delenv(name, raising=False)


def _configure(monkeypatch: pytest.MonkeyPatch, endpoint: str, **env: str) -> None:
    monkeypatch.setenv("OSMOSIS_ROLLOUT_OTLP_ENDPOINT", endpoint)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


async def _run(client: httpx.AsyncClient, rollout_id: str, **fields: Any) -> dict[str, Any]:
    admitted = await client.post("/rollout", json=body(rollout_id, **fields))
    assert admitted.status_code == 202, admitted.text
    return await final_result(client, rollout_id, admitted.json()["polling_lease_token"])


async def test_every_event_and_attribute_of_a_graded_rollout(
    monkeypatch: pytest.MonkeyPatch, backend: FakeBackend
) -> None:
    async with OtlpCollector().serving() as collector:
        _configure(monkeypatch, collector.url + "/", **OWNER_ENV)  # a trailing slash is dropped
        async with running(backend) as (client, _service):
            result = await _run(client, "r1", metadata=RUN, llm_api_key="sk-secret-policy-key")
    assert result["status"] == "success"
    assert collector.requests
    assert set(collector.requests) == {("/v1/logs", "application/x-protobuf")}
    records = sorted(collector.records, key=lambda r: r.attributes["event_sequence"])
    assert [r.attributes["status"] for r in records] == ["queued", "running", "grading", "success"]
    assert [r.attributes["event_sequence"] for r in records] == [1, 2, 3, 4]
    for record in records:
        assert record.body == "Rollout ownership"
        assert record.severity_text == "INFO"
        assert record.severity_number == 0  # 0.3.8 sets only the text
        assert record.time_unix_nano > 0
        assert record.resource == {"service.name": "osmosis-rollout-server"}
        assert record.scope == "osmosis_ai.rollout.server.observability"
        # Exactly these attributes: no prompt, label, key or result ever leaves the server.
        assert record.attributes == {
            "event": "rollout.ownership",
            "rollout_id": "r1",
            "server_id": "server-7",
            "server_name": "multiply-prod",
            "namespace": "team-a",
            "run_id": "run-1",
            "run_name": "nightly multiply",
            "status": record.attributes["status"],
            "event_sequence": record.attributes["event_sequence"],
        }
    assert [r.time_unix_nano for r in records] == sorted(r.time_unix_nano for r in records)


async def test_terminal_statuses_however_a_rollout_ends(
    monkeypatch: pytest.MonkeyPatch, backend: FakeBackend
) -> None:
    async with OtlpCollector().serving() as collector:
        _configure(monkeypatch, collector.url, OSMOSIS_ROLLOUT_SERVER_ID="s")
        leases = {"result_wait_timeout_sec": 0.2, "polling_lease_timeout_sec": 0.5}
        async with running(backend, **leases) as (client, service):
            raised = await _run(client, "raise", metadata={"mode": "raise"})
            refused = await _run(client, "wf", metadata={"mode": "workflow_error"})
            ungraded = await _run(client, "plain", grade=False)
            blocked = await client.post(
                "/rollout", json=body("blocked", metadata={"mode": "block"})
            )
            await backend.started_event("blocked").wait()
            cancel = await client.post("/rollout/cancel", json={"ids": ["blocked"]})
            cancelled = await final_result(client, "blocked", blocked.json()["polling_lease_token"])
            # Nobody polls this one: its lease runs out and the server fails it.
            await client.post("/rollout", json=body("abandoned", metadata={"mode": "block"}))
            progress = service.entries["abandoned"].progress
            while not progress.status.is_terminal:
                await progress.wait_for_status_change()
    assert (raised["status"], refused["status"], ungraded["status"]) == (
        "failure",
        "failure",
        "success",
    )
    assert cancel.status_code == 200
    assert cancelled["status"] == "cancelled"
    assert collector.statuses("raise") == ["queued", "running", "failure"]
    assert collector.statuses("wf") == ["queued", "running", "failure"]
    assert collector.statuses("plain") == ["queued", "running", "success"]
    assert collector.statuses("blocked") == ["queued", "running", "cancelled"]
    assert collector.statuses("abandoned") == ["queued", "running", "failure"]
    sequences = sorted(r.attributes["event_sequence"] for r in collector.records)
    assert sequences == list(range(1, len(sequences) + 1))  # one counter for the server


async def test_fields_that_are_not_exportable_text_are_left_out(
    monkeypatch: pytest.MonkeyPatch, backend: FakeBackend
) -> None:
    async with OtlpCollector().serving() as collector:
        _configure(
            monkeypatch,
            collector.url,
            _OSMOSIS_ROLLOUT_INSTANCE_ID="eval-instance-1",  # the fallback server id
            _OSMOSIS_ROLLOUT_NAME="   ",
            OSMOSIS_ROLLOUT_NAMESPACE="bad\nnamespace",
        )
        async with running(backend) as (client, _service):
            await _run(
                client,
                "odd",
                metadata={"osmosis_observability": {"run_id": "x" * 513, "run_name": 7}},
            )
            await _run(client, "not-a-dict", metadata={"osmosis_observability": ["run-1"]})
            await _run(
                client, "at-limit", metadata={"osmosis_observability": {"run_id": "y" * 512}}
            )
            await _run(client, "no\u00a0break")  # an id that is not printable: never recorded
            await _run(client, "z" * 513)  # nor one longer than 512 characters
    assert collector.statuses("odd") == ["queued", "running", "grading", "success"]
    expected = {"event": "rollout.ownership", "server_id": "eval-instance-1"}
    for record in collector.for_rollout("odd") + collector.for_rollout("not-a-dict"):
        assert {k: v for k, v in record.attributes.items() if k in expected} == expected
        assert not {"server_name", "namespace", "run_id", "run_name"} & set(record.attributes)
    assert {r.attributes["run_id"] for r in collector.for_rollout("at-limit")} == {"y" * 512}
    assert collector.for_rollout("no\u00a0break") == []
    assert collector.for_rollout("z" * 513) == []


async def test_the_host_name_is_the_last_server_id(
    monkeypatch: pytest.MonkeyPatch, backend: FakeBackend
) -> None:
    async with OtlpCollector().serving() as collector:
        _configure(monkeypatch, collector.url)
        async with running(backend) as (client, _service):
            await _run(client, "h")
    assert {r.attributes["server_id"] for r in collector.records} == {socket.gethostname()}


@pytest.mark.parametrize("mode", ["down", "error", "hang"])
async def test_a_failing_collector_never_affects_rollouts(
    monkeypatch: pytest.MonkeyPatch, backend: FakeBackend, mode: str
) -> None:
    collector = OtlpCollector(mode="ok" if mode == "down" else mode)  # type: ignore[arg-type]
    async with collector.serving():
        _configure(monkeypatch, closed_port_url() if mode == "down" else collector.url)
        async with running(backend) as (client, service):
            results = [await _run(client, f"r{i}", metadata={"reward": 0.5}) for i in range(3)]
            assert service.health()["lifecycle"]["accepting_rollouts"] is True
    assert [r["status"] for r in results] == ["success"] * 3
    assert [r["sample"]["reward"] for r in results] == [0.5] * 3
    assert collector.records == []
    if mode != "down":
        assert collector.requests  # the server did try to export


async def test_unset_endpoint_exports_nothing_and_imports_no_opentelemetry_sdk(
    backend: FakeBackend,
) -> None:
    async with running(backend) as (client, service):
        result = await _run(client, "quiet")
        assert service._admission.ownership is None
    assert result["status"] == "success"


def test_a_server_without_the_endpoint_never_imports_the_opentelemetry_sdk() -> None:
    # A fresh interpreter: a server that starts and runs a rollout never imports OpenTelemetry's
    # SDK, exporter or protobuf modules (FastAPI itself may import the small OpenTelemetry API).
    code = (
        "import asyncio, sys, httpx\n"
        "SDK = ('opentelemetry.sdk', 'opentelemetry.exporter', 'opentelemetry.proto')\n"
        "from osmosis_ai.rollout import AgentWorkflow, LocalBackend\n"
        "from osmosis_ai.rollout.server import create_rollout_server\n"
        "from osmosis_ai.testing import serve_app\n"
        "class Echo(AgentWorkflow):\n"
        "    async def run(self, ctx):\n"
        "        return None\n"
        "async def main():\n"
        "    app = create_rollout_server(backend=LocalBackend(workflow=Echo), "
        "configure_logging=False)\n"
        "    async with serve_app(app) as url, httpx.AsyncClient(base_url=url) as client:\n"
        "        r = await client.post('/rollout', json={'rollout_id': 'q', 'label': '1', "
        "'initial_messages': [], 'chat_completions_url': 'http://127.0.0.1:9/v1'})\n"
        "        assert r.status_code == 202, r.text\n"
        "    print(sorted(m for m in sys.modules if m.startswith(SDK)))\n"
        "asyncio.run(main())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.stdout.strip() == "[]", out.stderr


def test_endpoint_set_without_the_extra_stops_the_server_with_the_pip_install() -> None:
    # A real server process in which the extra's modules cannot be imported (as without it).
    code = (
        "import sys\n"
        "sys.modules['opentelemetry.exporter.otlp.proto.http._log_exporter'] = None\n"
        "sys.modules['opentelemetry.sdk._logs'] = None\n"
        "from osmosis_ai.rollout import AgentWorkflow, LocalBackend\n"
        "from osmosis_ai.rollout.server import create_rollout_server, serve\n"
        "class Echo(AgentWorkflow):\n"
        "    async def run(self, ctx):\n"
        "        return None\n"
        "serve(create_rollout_server(backend=LocalBackend(workflow=Echo)), port=0)\n"
    )
    env = {**os.environ, "OSMOSIS_ROLLOUT_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode != 0
    assert f"{OtlpExtraMissing.__name__}: {INSTALL_HINT}" in out.stderr
    assert "pip install 'osmosis-ai[otlp]'" in INSTALL_HINT
    assert "OSMOSIS_ROLLOUT_OTLP_ENDPOINT" in INSTALL_HINT


def test_the_endpoint_s_credentials_never_reach_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="osmosis_ai.rollout.server")
    telemetry = telemetry_from_env(
        {
            "OSMOSIS_ROLLOUT_OTLP_ENDPOINT": "http://user:hunter2-password@127.0.0.1:9?token=abc",
            "OSMOSIS_ROLLOUT_SERVER_ID": "s",
        }
    )
    assert telemetry is not None
    telemetry.close()
    assert "127.0.0.1:9" in caplog.text
    assert "hunter2-password" not in caplog.text
    assert "token=abc" not in caplog.text


def test_an_observer_that_raises_is_logged_and_the_transition_stands(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(status: RolloutStatus) -> None:
        raise RuntimeError("observer bug")

    progress = RolloutProgress(on_status=broken)
    with caplog.at_level(logging.WARNING, logger="osmosis_ai.rollout.server"):
        publish(progress, RolloutStatus.SUCCESS)
    assert progress.status is RolloutStatus.SUCCESS
    assert "rollout status observer failed" in caplog.text
