"""The server owns a rollout's lifecycle; LocalBackend only runs it (real server, real HTTP).

One status source: with ``LocalBackend(max_concurrency=1)`` a second rollout is ``queued``
in ``/status``, in the long poll and in the backend's counts until it holds the slot.
Cancellation is the server cancelling its own task, also for code that swallows it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import httpx

from osmosis_ai.rollout import (
    AgentWorkflow,
    AgentWorkflowConfig,
    AgentWorkflowContext,
    ExecutionBackend,
    ExecutionOutcome,
    ExecutionRequest,
    ExecutionResult,
    LocalBackend,
    RolloutSample,
    RolloutStatus,
    get_rollout_context,
)
from osmosis_ai.rollout.server._impl.entry import AdmissionError
from osmosis_ai.rollout.types.protocol import RolloutInitRequest

from .rollout_server_harness import LEASE, body, running

ANSWER = [{"role": "assistant", "content": "42"}]
_gates: dict[str, asyncio.Event] = {}
_entered: dict[str, asyncio.Event] = {}
_seen: dict[str, tuple[str, str | None, str | None]] = {}


def _event(table: dict[str, asyncio.Event], rollout_id: str) -> asyncio.Event:
    return table.setdefault(rollout_id, asyncio.Event())


class Gated(AgentWorkflow[AgentWorkflowConfig]):
    """Records its RolloutContext, then waits until the test opens its gate."""

    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
        rollout = get_rollout_context()
        assert rollout is not None
        rid = rollout.rollout_id
        _seen[rid] = (rollout.chat_completions_url, rollout.api_key, rollout.process_id)
        _event(_entered, rid).set()
        if (ctx.metadata or {}).get("swallow"):
            with contextlib.suppress(asyncio.CancelledError):
                await _event(_gates, rid).wait()
        else:
            await _event(_gates, rid).wait()
        return ANSWER


async def _admit(client: httpx.AsyncClient, rollout_id: str, **fields: Any) -> str:
    response = await client.post("/rollout", json=body(rollout_id, **fields))
    assert response.status_code == 202, response.text
    return response.json()["polling_lease_token"]


async def _views(
    client: httpx.AsyncClient, rollout_id: str, token: str
) -> tuple[str, str, dict[str, Any]]:
    """The rollout's status from ``/status``, from a long poll, and the backend's counts."""
    status = (await client.get(f"/rollout/{rollout_id}/status")).json()["status"]
    polled = (await client.get(f"/rollout/{rollout_id}/result", headers={LEASE: token})).json()
    health = (await client.get("/health")).json()
    return status, polled["status"], health["concurrency"]


async def test_one_status_source_with_a_concurrency_cap_of_one() -> None:
    backend = LocalBackend(workflow=Gated, max_concurrency=1)
    async with running(backend, result_wait_timeout_sec=0.05) as (client, service):
        token_a = await _admit(client, "cap-a")
        await _event(_entered, "cap-a").wait()
        token_b = await _admit(client, "cap-b")
        for _ in range(3):  # repeated observations while b waits for the slot
            assert await _views(client, "cap-a", token_a) == (
                "running",
                "running",
                {"max_concurrent": 1, "queued": 1, "running": 1},
            )
            assert await _views(client, "cap-b", token_b) == (
                "queued",
                "queued",
                {"max_concurrent": 1, "queued": 1, "running": 1},
            )
            assert service.entries["cap-b"].progress.status == "queued"
        _event(_gates, "cap-a").set()
        await _event(_entered, "cap-b").wait()
        status, polled, counts = await _views(client, "cap-b", token_b)
        assert (status, counts) == ("running", {"max_concurrent": 1, "queued": 0, "running": 1})
        assert polled == "running"
        _event(_gates, "cap-b").set()
        final = (await client.get("/rollout/cap-b/result", headers={LEASE: token_b})).json()
        while final["status"] == "running":
            final = (await client.get("/rollout/cap-b/result", headers={LEASE: token_b})).json()
        health = (await client.get("/health")).json()
    assert final["status"] == "success"
    assert health["concurrency"] == {"max_concurrent": 1, "queued": 0, "running": 0}
    # The backend entered a context built from the request: the policy endpoint, the key and
    # the server's process id (0.3.8: RolloutContext.process_id == /health process_id).
    assert _seen["cap-b"] == ("http://127.0.0.1:9/v1/rollouts/r1", None, health["process_id"])


async def test_cancel_queued_and_running_and_code_that_swallows_it() -> None:
    backend = LocalBackend(workflow=Gated, max_concurrency=1)
    async with running(backend) as (client, _):
        await _admit(client, "c-run", metadata={"swallow": True}, llm_api_key="policy-key")
        await _event(_entered, "c-run").wait()
        token_q = await _admit(client, "c-queued")
        cancel = await client.post("/rollout/cancel", json={"ids": ["c-queued", "c-run", "zz"]})
        queued = (await client.get("/rollout/c-queued/result", headers={LEASE: token_q})).json()
        run_status = (await client.get("/rollout/c-run/status")).json()
        while run_status["status"] == "running":
            await asyncio.sleep(0)  # the swallowing workflow returns on its next step
            run_status = (await client.get("/rollout/c-run/status")).json()
        health = (await client.get("/health")).json()
    assert cancel.json()["dispositions"] == {
        "c-queued": "cancelled_queued",
        "c-run": "cancelled_running",
        "zz": "not_found",
    }
    assert (queued["status"], queued["err_message"]) == ("cancelled", "cancelled")
    assert run_status["status"] == "cancelled"
    assert "c-queued" not in _entered  # never started
    assert _seen["c-run"][1] == "policy-key"
    assert health["concurrency"] == {"max_concurrent": 1, "queued": 0, "running": 0}


async def test_max_queue_depth_is_exact_under_concurrent_admission() -> None:
    """Issue 20.4: admissions in one event-loop turn have not reached the backend yet; the
    bound still counts them (it let 258 in against max_queue_depth=64)."""
    backend = LocalBackend(workflow=Gated, max_concurrency=2, max_queue_depth=3)
    ids = [f"depth-{i}" for i in range(40)]
    async with running(backend) as (client, service):
        # One turn: nothing in between lets an admitted task reach the backend.
        codes = []
        tokens = {}
        for rid in ids[:10]:
            try:
                admitted = service.admit(RolloutInitRequest.model_validate(body(rid)))
                tokens[rid] = json.loads(admitted)["polling_lease_token"]
                codes.append(202)
            except AdmissionError as exc:
                codes.append(exc.status_code)
        assert codes == [202] * 5 + [429] * 5  # 2 running + 3 queued
        # Concurrent HTTP admissions on 30 connections while those five are in flight.
        responses = await asyncio.gather(
            *(client.post("/rollout", json=body(rid)) for rid in ids[10:])
        )
        assert {r.status_code for r in responses} == {429}
        health = (await client.get("/health")).json()
        assert health["concurrency"] == {"max_concurrent": 2, "queued": 3, "running": 2}
        for rid in ids[:5]:
            _event(_gates, rid).set()
        for rid, token in tokens.items():
            result = {"status": "queued"}
            while result["status"] in ("queued", "running"):
                result = (await client.get(f"/rollout/{rid}/result", headers={LEASE: token})).json()
            assert result["status"] == "success"
        # Drained: the bound admits again, exactly 2 + 3 of a concurrent burst.
        burst = await asyncio.gather(*(client.post("/rollout", json=body(rid)) for rid in ids[10:]))
        assert sum(r.status_code == 202 for r in burst) == 5
        assert {r.status_code for r in burst} == {202, 429}
        for rid in ids[10:]:
            _event(_gates, rid).set()


class Legacy038Backend(ExecutionBackend):
    """A backend written for osmosis-ai 0.3.8: ``execute(request)``, ambient context."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, str | None, str]] = []

    async def execute(self, request: ExecutionRequest) -> ExecutionOutcome:  # pyright: ignore[reportIncompatibleMethodOverride]
        ctx = get_rollout_context()
        assert ctx is not None
        assert ctx.progress is not None
        self.seen.append(
            (ctx.chat_completions_url, ctx.api_key, ctx.process_id, ctx.progress.status.value)
        )
        await ctx.set_status(RolloutStatus.GRADING)
        sample = RolloutSample(messages=ANSWER, reward=0.5)
        return ExecutionOutcome(
            workflow=ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample)
        )


async def test_a_0_3_8_backend_runs_unmodified() -> None:
    backend = Legacy038Backend()
    async with running(backend) as (client, _):
        token = await _admit(client, "legacy", llm_api_key="k")
        result = (await client.get("/rollout/legacy/result", headers={LEASE: token})).json()
        while result["status"] != "success":
            result = (await client.get("/rollout/legacy/result", headers={LEASE: token})).json()
        process_id = (await client.get("/health")).json()["process_id"]
    assert result["sample"]["reward"] == 0.5
    assert backend.seen == [("http://127.0.0.1:9/v1/rollouts/r1", "k", process_id, "running")]


async def test_rollout_context_process_id_is_the_servers() -> None:
    """0.3.8: ``RolloutContext.process_id`` inside a backend equals ``/health``'s."""
    backend = LocalBackend(workflow=Gated)
    async with running(backend) as (client, service):
        await _admit(client, "pid")
        await _event(_entered, "pid").wait()
        health = (await client.get("/health")).json()
        _event(_gates, "pid").set()
    assert _seen["pid"][2] == health["process_id"] == service.process_id
