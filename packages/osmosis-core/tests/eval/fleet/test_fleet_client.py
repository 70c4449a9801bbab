"""The fleet client against a real rollout server on 127.0.0.1: a ``429`` shrinks the server's
slots (the 429 feedback), and a finished rollout comes back through the fleet handle."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from osmosis_ai.eval._impl.fleet.client import FleetClient, open_member
from osmosis_ai.eval._impl.fleet.pool import Fleet
from osmosis_ai.rollout import AgentWorkflow, Grader, LocalBackend
from osmosis_ai.rollout.server import create_rollout_server
from osmosis_ai.testing import serve_app

RELEASE = asyncio.Event()


class Waits(AgentWorkflow):
    async def run(self, ctx: Any) -> Any:
        await RELEASE.wait()
        return [*ctx.prompt, {"role": "assistant", "content": "done"}]


class One(Grader):
    async def grade(self, ctx: Any) -> None:
        ctx.set_reward(1.0)


def _request(rollout_id: str) -> dict[str, Any]:
    return {
        "initial_messages": [{"role": "user", "content": "hi"}],
        "chat_completions_url": "http://127.0.0.1:9/v1",
        "rollout_id": rollout_id,
        "llm_api_key": "token",
        "label": "1",
        "grade": True,
    }


async def _until(condition: Any) -> None:
    """Poll ``condition`` for up to 10 s (the server's state has no event to wait on)."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached within 10 s")


async def test_a_429_shrinks_the_slots_and_results_come_back() -> None:
    RELEASE.clear()
    backend = LocalBackend(workflow=Waits, grader=One, max_concurrency=1, max_queue_depth=1)
    app = create_rollout_server(backend=backend, configure_logging=False)
    async with serve_app(app) as url:
        member = open_member(url, None, admission_timeout_sec=30)
        try:
            fleet = Fleet([member], on_event=lambda *event: None)
            assert await fleet.start() == []
            assert member.capacity == 1  # from /health
            member.capacity = member.limit = 4  # pretend it has room: the server will say 429
            # the proxy is only used to re-dispatch, which a single healthy server never does
            client = FleetClient(fleet, cast(Any, None))
            first = await client.run_rollout_async(**_request("r-1"))
            await _until(lambda: member.in_flight == 1)
            second = await client.run_rollout_async(**_request("r-2"))  # queued on the server
            await _until(lambda: member.in_flight == 2)
            third = await client.run_rollout_async(**_request("r-3"))  # the queue is full: 429
            await _until(lambda: member.busy_answers >= 1)
            assert member.limit == 2.0  # no more than it runs, minus one, at least one
            RELEASE.set()
            result = await first.wait_for_completion()
            assert result.status.value == "success"
            assert result.sample is not None
            assert result.sample.reward == 1.0
            assert (await second.wait_for_completion()).status.value == "success"
            third.cancel()
            assert member.completed == 2
            assert member.failure is None
        finally:
            await member.client.aclose()
