"""Drain, outbox, retention and trajectories: nothing finished is ever silently lost."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx

from osmosis_ai.rollout.server._impl.outbox import JOURNAL_NAME, replay

from .rollout_server_harness import (
    LEASE,
    CallbackListener,
    FakeBackend,
    body,
    final_result,
    free_port,
    running,
    serve_app,
)


async def test_trajectory_is_saved_for_every_finished_rollout(osmosis_home: Path) -> None:
    async with running(FakeBackend()) as (client, _):
        token = (await client.post("/rollout", json=body("r1"))).json()["polling_lease_token"]
        await final_result(client, "r1", token)
    document = json.loads((osmosis_home / "r1" / "trajectory.json").read_text())
    assert document["schema_version"] == "ATIF-v1.7"
    assert document["session_id"] == "r1"
    assert document["extra"]["osmosis"]["reward"] == 1.0
    assert "llm_api_key" not in json.dumps(document)


async def test_callback_ack_report_is_merged_into_the_trajectory(osmosis_home: Path) -> None:
    listener = CallbackListener()
    listener.ack = {"ok": True, "trajectory": {"model_name": "policy-v7", "samples": {}}}
    async with serve_app(listener.app) as base, running(FakeBackend()) as (client, _):
        payload = body(
            "r1",
            completion_callback_url=listener.url(base, "completion", "r1"),
            grader_callback_url=listener.url(base, "grader", "r1"),
        )
        await client.post("/rollout", json=payload)
        await listener.wait_for(2)
    document = json.loads((osmosis_home / "r1" / "trajectory.json").read_text())
    assert document["agent"]["model_name"] == "policy-v7"


async def test_shutdown_drains_cancels_and_persists_unfetched_results(tmp_path: Path) -> None:
    outbox = tmp_path / "outbox"
    backend = FakeBackend()
    options: dict[str, Any] = {"drain_grace_sec": 0.3, "outbox_dir": outbox}
    async with running(backend, **options) as (client, _):
        tokens = {
            rid: (await client.post("/rollout", json=body(rid, metadata=meta))).json()[
                "polling_lease_token"
            ]
            for rid, meta in (
                ("fetched", {}),
                ("fast", {"mode": "sleep", "seconds": 0.1}),
                ("slow", {"mode": "block"}),
            )
        }
        await final_result(client, "fetched", tokens["fetched"])
    assert backend.shutdown_calls == 1
    assert "slow" in backend.cancelled
    stored_by_id = {r["id"]: json.dumps(r) for r in replay(outbox / JOURNAL_NAME)}
    assert sorted(stored_by_id) == ["fast", "slow"]
    stored = stored_by_id["slow"]
    assert tokens["slow"] not in stored  # only the token's hash is kept
    async with running(FakeBackend(), **options) as (client, _):
        slow = await client.get("/rollout/slow/result", headers={LEASE: tokens["slow"]})
        fast = await client.get("/rollout/fast/result", headers={LEASE: tokens["fast"]})
        wrong = await client.get("/rollout/slow/result", headers={LEASE: tokens["fast"]})
    assert slow.json()["status"] == "cancelled"
    assert "shut down" in slow.json()["err_message"]
    assert fast.json()["status"] == "success"
    assert wrong.status_code == 403
    # Both were fetched this time: nothing is left for a third start.
    assert replay(outbox / JOURNAL_NAME) == []


async def test_retention_is_bounded_by_count() -> None:
    async with running(FakeBackend(), max_retained_results=3) as (client, service):
        tokens = {}
        for i in range(5):
            rid = f"r{i}"
            tokens[rid] = (await client.post("/rollout", json=body(rid))).json()[
                "polling_lease_token"
            ]
            await final_result(client, rid, tokens[rid])
        statuses = [
            (await client.get(f"/rollout/{rid}/result", headers={LEASE: tokens[rid]})).status_code
            for rid in tokens
        ]
        assert len(service.entries) == 3
    assert statuses == [404, 404, 200, 200, 200]


async def test_user_lifespan_wraps_the_server(backend: FakeBackend) -> None:
    from contextlib import asynccontextmanager

    events: list[str] = []

    @asynccontextmanager
    async def lifespan(app: Any):
        events.append("start")
        yield {"resource": 1}
        events.append(f"stop after backend shutdown={backend.shutdown_calls}")

    async with running(backend, lifespan=lifespan) as (client, _):
        assert (await client.get("/health")).status_code == 200
    assert events == ["start", "stop after backend shutdown=1"]


_SERVER_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from osmosis_ai.rollout.backend.base import ExecutionBackend
    from osmosis_ai.rollout.server import create_rollout_server, serve
    from osmosis_ai.rollout.types import (
        ExecutionOutcome, ExecutionResult, RolloutSample, RolloutStatus,
    )

    class Sleepy(ExecutionBackend):
        async def execute(self, request):
            await asyncio.sleep(float((request.metadata or {}).get("seconds", 0)))
            sample = RolloutSample(messages=[{"role": "assistant", "content": "ok"}], reward=1.0)
            result = ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample)
            return ExecutionOutcome(workflow=result, grader=result)

    app = create_rollout_server(backend=Sleepy(), drain_grace_sec=0.5, cancel_cleanup_sec=1)
    serve(app, port=int(sys.argv[1]))
    """
)


async def test_sigterm_with_rollouts_in_flight(tmp_path: Path, osmosis_home: Path) -> None:
    script = tmp_path / "server_main.py"
    script.write_text(_SERVER_SCRIPT)
    port = free_port()
    env = {**os.environ, "OSMOSIS_HOME": str(osmosis_home), "PYTHONUNBUFFERED": "1"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        str(port),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    listener = CallbackListener()
    url = f"http://127.0.0.1:{port}"
    try:
        async with serve_app(listener.app) as base, httpx.AsyncClient(base_url=url) as client:
            deadline = time.monotonic() + 60  # generous: a loaded machine imports slowly
            while True:  # wait for the child process to listen
                try:
                    if (await client.get("/health")).status_code == 200:
                        break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise
                await asyncio.sleep(0.05)
            tokens = {}
            for rid, seconds in (("fast", 0.2), ("slow", 30)):
                response = await client.post(
                    "/rollout", json=body(rid, metadata={"seconds": seconds})
                )
                tokens[rid] = response.json()["polling_lease_token"]
            callback = body(
                "cb",
                metadata={"seconds": 30},
                completion_callback_url=listener.url(base, "completion", "cb"),
                grader_callback_url=listener.url(base, "grader", "cb"),
            )
            assert (await client.post("/rollout", json=callback)).status_code == 202
            process.send_signal(signal.SIGTERM)
            calls = await listener.wait_for(2)
            async with asyncio.timeout(10):
                assert process.stdout is not None
                output = (await process.stdout.read()).decode()
                returncode = await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    # uvicorn re-raises the signal after a graceful shutdown, so the exit reports SIGTERM.
    assert returncode in (0, -signal.SIGTERM), output
    assert f"rollout server listening on http://127.0.0.1:{port}" in output
    assert calls[0].body["status"] == "cancelled"
    assert calls[1].body["status"] == "failure"
    # The default outbox is per server, beside the home (never among the rollout folders).
    [journal] = osmosis_home.with_name(f"{osmosis_home.name}.outbox").glob(f"*/{JOURNAL_NAME}")
    records = {record["id"]: record for record in replay(journal)}
    assert set(records) == {"fast", "slow"}
    assert records["fast"]["status"] == "success"
    assert records["slow"]["status"] == "cancelled"
    assert "shut down" in records["slow"]["err_message"]


def test_the_journal_keeps_any_rollout_id_and_skips_a_torn_line(tmp_path: Path) -> None:
    from osmosis_ai.rollout.server._impl.outbox import Outbox

    ids = ["r1", "R1", "x" * 400, "a:b*c?", "outbox", "lock", "journal.jsonl"]
    outbox = Outbox(tmp_path / "outbox")
    assert outbox.open() == []
    for rid in ids:
        outbox.append(rid, {"op": "done", "id": rid, "result": "{}"})
    outbox.append("r1", None)  # acknowledged: gone
    outbox.close()
    with (tmp_path / "outbox" / JOURNAL_NAME).open("ab") as fh:
        fh.write(b'{"op":"done","id":"torn","res')  # a crash in the middle of a write
    reopened = Outbox(tmp_path / "outbox")
    assert [r["id"] for r in reopened.open()] == ids[1:]
    reopened.close()


async def test_a_started_server_spaces_out_full_collections() -> None:
    """Full collections (which stop the loop and find next to no garbage in the server) run at
    most once per FULL_COLLECTION_SPACING middle-generation collections; the young
    generations keep their thresholds."""
    import gc

    from osmosis_ai.rollout.server._impl.heap import FULL_COLLECTION_SPACING

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        async with running(FakeBackend()) as (client, _):
            assert (await client.get("/health")).status_code == 200
            assert gc.get_threshold() == (700, 10, FULL_COLLECTION_SPACING)
    finally:
        gc.set_threshold(*before)
