"""UpstreamCaller against a real scripted policy server: what one upstream attempt is sent on,
what its answer does to the adaptive limit, and the retry event."""

from __future__ import annotations

import json
from typing import Any

import httpx

from osmosis_ai.eval._impl.adaptive import AdaptiveLimit
from osmosis_ai.eval._impl.proxy.caller import UpstreamCaller
from osmosis_ai.eval._impl.proxy.calls import RetryPolicy
from osmosis_ai.eval._impl.proxy.upstream import Upstream
from osmosis_ai.testing import ErrorReply, ScriptedPolicyServer


async def test_post_reads_a_whole_answer_with_the_key_on_the_lean_path() -> None:
    async with ScriptedPolicyServer("multiply") as policy:
        caller = UpstreamCaller(Upstream(model="m", base_url=policy.url, api_key="k"))
        try:
            body = {"model": "m", "messages": [{"role": "user", "content": "What is 6 * 7?"}]}
            answer = await caller.post(json.dumps(body).encode())
        finally:
            await caller.aclose()
    assert answer.status_code == 200
    assert (answer.content_type or "").startswith("application/json")
    assert json.loads(answer.content)["choices"][0]["message"]
    assert caller._lean is not None  # plain http://: the lean transport, not httpx's
    assert [r.bearer_token for r in policy.requests] == ["k"]


async def test_answers_move_the_adaptive_limit_and_retries_are_reported() -> None:
    limit = AdaptiveLimit(8)
    events: list[tuple[str, dict[str, Any]]] = []
    caller = UpstreamCaller(
        Upstream(model="m", base_url="http://127.0.0.1:9/v1"),
        retry=RetryPolicy(base_delay=0.001, max_delay=0.002),
        on_event=lambda kind, details: events.append((kind, details)),
        limit=limit,
    )
    sent = await caller.acquire()
    assert limit.in_flight == 1
    caller.release()
    caller.signal(sent, 200, None, None)
    assert limit.successes == 1
    caller.signal(sent, 429, "1", None)
    caller.signal(sent, None, None, httpx.ReadTimeout("slow"))
    assert limit.congestion_signals == 2
    caller.signal(sent, 400, None, None)  # the request's fault: no signal
    assert (limit.successes, limit.congestion_signals) == (1, 2)
    await caller.backoff(2, None, "HTTP 503")
    ((kind, details),) = events
    assert (kind, details["attempt"], details["reason"]) == ("upstream_retry", 2, "HTTP 503")
    assert 0 < details["delay_sec"] <= 0.002


async def test_preflight_reports_the_status_or_that_nothing_answered() -> None:
    async with ScriptedPolicyServer(lambda body: ErrorReply(401, "bad key")) as policy:
        caller = UpstreamCaller(Upstream(model="m", base_url=policy.url))
        try:
            status, excerpt = await caller.preflight()
        finally:
            await caller.aclose()
    assert status == 401
    assert "bad key" in excerpt
    dead = UpstreamCaller(Upstream(model="m", base_url="http://127.0.0.1:9/v1"))
    try:
        assert (await dead.preflight())[0] is None
    finally:
        await dead.aclose()
