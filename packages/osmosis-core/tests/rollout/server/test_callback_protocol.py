"""0.3.0 callback protocol on the same server (reference §B, §H 7-13), against a real
callback listener on 127.0.0.1, including delivery faults (listener down, 5xx storms, 400)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from osmosis_ai.rollout.server._impl.outbox import JOURNAL_NAME, replay

from .rollout_server_harness import (
    LEASE,
    CallbackListener,
    FakeBackend,
    body,
    free_port,
    running,
    serve_app,
)

FAST_RETRY: dict[str, Any] = {
    "callback_backoff_initial_sec": 0.02,
    "callback_backoff_max_sec": 0.1,
}


async def backend_done(service: Any) -> None:
    """Wait for every callback delivery of ``service`` to end (delivered, dropped or parked)."""
    async with asyncio.timeout(4):
        while service._deliveries:
            await asyncio.wait(set(service._deliveries))


def callback_body(
    base: str,
    listener: CallbackListener,
    rollout_id: str | None,
    *,
    grader: bool = True,
    **fields: Any,
) -> dict[str, Any]:
    key = rollout_id or "minted"
    payload = body(
        rollout_id,
        completion_callback_url=listener.url(base, "completion", key),
        controller_api_key="ctrl-key",
        **fields,
    )
    if grader:
        payload["grader_callback_url"] = listener.url(base, "grader", key)
    return payload


async def test_completion_then_grader_callbacks_with_bearer(backend: FakeBackend) -> None:
    listener = CallbackListener()
    async with serve_app(listener.app) as base, running(backend) as (client, _):
        response = await client.post("/rollout", json=callback_body(base, listener, None))
        assert response.status_code == 202
        minted = response.json()["rollout_id"]
        assert len(minted) == 32
        calls = await listener.wait_for(2)
    completion, grader = calls
    assert (completion.kind, grader.kind) == ("completion", "grader")
    assert completion.body == {
        "status": "success",
        "rollout_id": minted,
        "extra_fields": None,
        "err_message": None,
        "err_category": None,
    }
    assert grader.body["status"] == "success"
    assert grader.body["rollout_id"] == minted
    assert grader.body["err_message"] is None
    assert set(grader.body["sample"]) == {
        "messages",
        "label",
        "reward",
        "remove_sample",
        "metrics",
        "extra_fields",
    }
    assert grader.body["sample"]["reward"] == 1.0
    assert completion.authorization == grader.authorization == "Bearer ctrl-key"
    # llm_api_key was omitted: the rollout context falls back to controller_api_key.
    assert backend.contexts[minted][1] == "ctrl-key"


async def test_without_grader_url_only_completion_and_no_grading(backend: FakeBackend) -> None:
    listener = CallbackListener()
    async with serve_app(listener.app) as base, running(backend) as (client, _):
        payload = callback_body(base, listener, "r1", grader=False, llm_api_key="llm")
        payload.pop("controller_api_key")
        token = (await client.post("/rollout", json=payload)).json()["polling_lease_token"]
        (completion,) = await listener.wait_for(1)
        # The same registry serves a poll of a callback-mode rollout.
        polled = (await client.get("/rollout/r1/result", headers={LEASE: token})).json()
    assert completion.body["status"] == "success"
    assert completion.authorization is None
    assert backend.requests[0].grade is False
    assert backend.contexts["r1"][1] == "llm"
    assert polled["status"] == "success"
    assert polled["sample"]["reward"] is None


@pytest.mark.parametrize(
    ("mode", "completion", "grader"),
    [
        ("grader_error", ("success", None), ("failure", "validation_error")),
        ("timeout", ("failure", "timeout"), ("failure", None)),
        ("raise", ("failure", "agent_error"), ("failure", None)),
        ("remove_sample", ("success", None), ("success", None)),
    ],
)
async def test_failures_reach_both_callbacks(
    backend: FakeBackend, mode: str, completion: tuple, grader: tuple
) -> None:
    listener = CallbackListener()
    async with serve_app(listener.app) as base, running(backend) as (client, _):
        payload = callback_body(base, listener, "r1", metadata={"mode": mode})
        assert (await client.post("/rollout", json=payload)).status_code == 202
        first, second = await listener.wait_for(2)
    assert (first.body["status"], first.body["err_category"]) == completion
    assert (second.body["status"], second.body["err_category"]) == grader
    if mode == "timeout":
        assert first.body["err_message"] == "workflow exceeded its 0.1s deadline"
        assert second.body["sample"] is None
    if mode in ("grader_error", "remove_sample"):
        sample = second.body["sample"]
        assert isinstance(sample, dict)
        assert sample["reward"] is None  # the wire reward rule


async def test_503_twice_then_200_is_one_delivery(backend: FakeBackend) -> None:
    listener = CallbackListener()
    listener.script["completion"] = [503, 503]
    async with serve_app(listener.app) as base, running(backend, **FAST_RETRY) as (client, _):
        await client.post("/rollout", json=callback_body(base, listener, "r1"))
        await listener.wait_for(2)
    completions = [a for a in listener.attempts if a[0] == "completion"]
    assert [status for _, _, status in completions] == [503, 503, 200]
    assert len([c for c in listener.calls if c.kind == "completion"]) == 1


async def test_5xx_storm_is_ridden_out(backend: FakeBackend) -> None:
    listener = CallbackListener()
    listener.script["completion"] = [500, 502, 504, 429, 408] * 3
    async with serve_app(listener.app) as base, running(backend, **FAST_RETRY) as (client, _):
        await client.post("/rollout", json=callback_body(base, listener, "r1"))
        calls = await listener.wait_for(2)
    assert [c.kind for c in calls] == ["completion", "grader"]
    assert len(listener.attempts) == 17


async def test_callback_400_is_not_retried(
    backend: FakeBackend, caplog: pytest.LogCaptureFixture
) -> None:
    listener = CallbackListener()
    listener.script["completion"] = [400]
    async with serve_app(listener.app) as base, running(backend, **FAST_RETRY) as (client, _):
        await client.post("/rollout", json=callback_body(base, listener, "r1"))
        await listener.wait_for(1, kind="grader")
    assert [a for a in listener.attempts if a[0] == "completion"] == [("completion", "r1", 400)]
    assert "rejected with HTTP 400 (not retried)" in caplog.text
    assert "scripted 400" in caplog.text  # the controller's body is logged


async def test_listener_down_then_back(backend: FakeBackend) -> None:
    listener = CallbackListener()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with running(backend, **FAST_RETRY) as (client, _):
        await client.post("/rollout", json=callback_body(base, listener, "r1"))
        await backend.started_event("r1").wait()
        await asyncio.sleep(0.4)  # the controller is down for a while: connections refused
        assert listener.attempts == []
        async with serve_app(listener.app, port=port):
            calls = await listener.wait_for(2)
    assert [c.kind for c in calls] == ["completion", "grader"]


async def test_exhausted_budget_parks_callbacks_in_the_outbox_and_restart_resends(
    tmp_path: Path,
) -> None:
    outbox = tmp_path / "outbox"
    listener = CallbackListener()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    options: dict[str, Any] = {**FAST_RETRY, "callback_retry_budget_sec": 0.3, "outbox_dir": outbox}
    async with running(FakeBackend(), **options) as (client, service):
        await client.post("/rollout", json=callback_body(base, listener, "r1"))
        await backend_done(service)
        assert service.entries["r1"].callbacks is None
    journal = outbox / JOURNAL_NAME
    [record] = replay(journal)
    assert record["id"] == "r1"
    assert [c["phase"] for c in record["callbacks"]] == ["completion", "grader"]
    assert journal.stat().st_mode & 0o077 == 0
    async with serve_app(listener.app, port=port), running(FakeBackend(), **options) as (_, s2):
        calls = await listener.wait_for(2)
        await asyncio.gather(*s2._deliveries)
    assert [c.kind for c in calls] == ["completion", "grader"]
    assert calls[0].authorization == "Bearer ctrl-key"
    assert replay(journal) == []  # delivered: acknowledged, nothing left for a third start
