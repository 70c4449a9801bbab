"""The policy proxy in its own process (``eval run --servers``): the same records as in-process,
signed per-rollout tokens, re-dispatch, and a clear error when the process dies."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from osmosis_ai.eval._impl.api import loop_factory
from osmosis_ai.eval._impl.proxy.calls import CallSummary, ProxyGone
from osmosis_ai.eval._impl.proxy.policy_proxy import PolicyProxy
from osmosis_ai.eval._impl.proxy.process import ProxyProcess, ProxyStartError
from osmosis_ai.eval._impl.proxy.upstream import Upstream
from osmosis_ai.testing import Reply, ScriptedPolicyServer, ToolCall

TURNS = [
    Reply(tool_calls=(ToolCall("multiply", {"a": 2, "b": 3}, id="call_1"),)),
    Reply(content="#### 6"),
]
USER: dict[str, object] = {"role": "user", "content": "What is 2 times 3?"}
ANSWERS = [Reply(content="ok")] * 8
KEY = "sk-upstream-secret-0123456789"


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


@asynccontextmanager
async def _started_proxy(script: list[Reply], calls: Path) -> AsyncIterator[ProxyProcess]:
    """A proxy process in front of a scripted policy, closed (then the policy) at the end."""
    async with ScriptedPolicyServer(script) as policy:
        proxy = ProxyProcess(Upstream(model="m", base_url=policy.url), calls_path=calls)
        await proxy.start()
        try:
            yield proxy
        finally:
            await proxy.aclose()


async def _ask(
    http: httpx.AsyncClient, url: str, token: str, messages: list[Any]
) -> httpx.Response:
    return await http.post(
        f"{url}/chat/completions",
        json={"messages": messages, "temperature": 0.3},
        headers={"Authorization": f"Bearer {token}"},
    )


async def _conversation(http: httpx.AsyncClient, url: str, token: str) -> None:
    first = await _ask(http, url, token, [USER])
    assert first.status_code == 200, first.text
    message = first.json()["choices"][0]["message"]
    tool = {"role": "tool", "tool_call_id": "call_1", "content": "6"}
    second = await _ask(http, url, token, [USER, message, tool])
    assert second.status_code == 200, second.text


def _proc_text(pid: int) -> bytes:
    """A process's argv and environment, as anyone on the machine may read them."""
    return Path(f"/proc/{pid}/cmdline").read_bytes() + Path(f"/proc/{pid}/environ").read_bytes()


def _calls(path: Path) -> list[dict[str, Any]]:
    """``llm_calls.jsonl`` without what differs from run to run (times)."""
    volatile = {"started_at", "latency_ms", "first_byte_ms"}
    lines = path.read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in volatile} for line in lines]


async def test_records_and_summary_are_exactly_those_of_the_in_process_proxy(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    async with ScriptedPolicyServer(TURNS) as policy:
        upstream = Upstream(model="m", base_url=policy.url, api_key=KEY)
        async with PolicyProxy(upstream) as local:
            with (tmp_path / "local.jsonl").open("w") as file:
                local.calls_file = file
                url, token = local.register("r1")
                await _conversation(http, url, token)
                expected = await local.finish("r1")
    async with ScriptedPolicyServer(TURNS) as policy:
        upstream = Upstream(model="m", base_url=policy.url, api_key=KEY)
        proxy = ProxyProcess(upstream, calls_path=tmp_path / "child.jsonl")
        await proxy.start()
        try:
            assert proxy.base_url.startswith("http://127.0.0.1:")  # loopback by default
            assert proxy.pid is not None
            seen = _proc_text(proxy.pid)
            assert KEY.encode() not in seen  # the key goes through the pipe only
            url, token = proxy.register("r1")
            await _conversation(http, url, token)
            summary = await proxy.finish("r1")
        finally:
            await proxy.aclose()
        assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in policy.requests)
    assert summary == expected
    assert summary.count == 2
    assert summary.tokens > 0
    assert [usage is not None for usage in summary.usages] == [True, True]
    assert summary.training_safety is not None
    assert summary.training_safety["append_only"] is True
    assert _calls(tmp_path / "child.jsonl") == _calls(tmp_path / "local.jsonl")
    assert _calls(tmp_path / "child.jsonl")[0]["rollout_id"] == "r1"


async def test_tokens_are_per_rollout_and_finished_rollouts_are_closed(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    async with _started_proxy(ANSWERS, tmp_path / "c") as proxy:
        url_a, token_a = proxy.register("a")
        url_b, token_b = proxy.register("b")
        proxy.register("c")
        assert (await _ask(http, url_a, token_b, [USER])).status_code == 401
        assert (await _ask(http, url_a, "x", [USER])).status_code == 401
        assert (await _ask(http, url_a, "1.forged", [USER])).status_code == 401
        assert (await _ask(http, url_a, token_a, [USER])).status_code == 200
        assert (await proxy.finish("a")).count == 1
        gone = await _ask(http, url_a, token_a, [USER])
        assert gone.status_code == 404
        assert "finished" in gone.text
        proxy.discard("b")  # no result: its calls are dropped, its route closed
        # discard is not acknowledged; the child handles messages in order, so once c's finish
        # is answered, b's close has been handled too.
        assert (await proxy.finish("c")).count == 0
        assert (await _ask(http, url_b, token_b, [USER])).status_code == 404
    assert [c["rollout_id"] for c in _calls(tmp_path / "c")] == ["a"]


async def test_a_redispatched_rollout_keeps_only_its_last_attempts_calls(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    async with _started_proxy(ANSWERS, tmp_path / "c") as proxy:
        url, first = proxy.register("r")
        assert (await _ask(http, url, first, [USER])).status_code == 200
        # Re-dispatched: a fresh token; the new attempt made no call yet.
        url, second = proxy.register("r")
        assert second != first
        assert (await proxy.finish("r")) == CallSummary()  # the stale call does not count

        url, first = proxy.register("s")
        assert (await _ask(http, url, first, [USER])).status_code == 200
        url, second = proxy.register("s")
        assert (await _ask(http, url, second, [USER])).status_code == 200
        stale = await _ask(http, url, first, [USER])  # the abandoned attempt, still running
        assert stale.status_code == 401
        assert (await proxy.finish("s")).count == 1


async def test_a_dead_proxy_process_fails_the_rows_still_running_clearly(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    async with _started_proxy(TURNS, tmp_path / "c") as proxy:
        url, token = proxy.register("r")
        assert (await _ask(http, url, token, [USER])).status_code == 200
        assert proxy.pid is not None
        os.kill(proxy.pid, signal.SIGKILL)
        with pytest.raises(ProxyGone, match=r"exited during the run.*--name"):
            await proxy.finish("r")
        with pytest.raises(ProxyGone):
            await proxy.finish("other")


async def test_a_taken_port_is_a_clear_start_error(tmp_path: Path) -> None:
    first = ProxyProcess(
        Upstream(model="m", base_url="http://127.0.0.1:9"), calls_path=tmp_path / "c"
    )
    await first.start()
    try:
        port = int(first.base_url.rsplit(":", 1)[1])
        second = ProxyProcess(
            Upstream(model="m", base_url="http://127.0.0.1:9"), calls_path=tmp_path / "d"
        )
        with pytest.raises(ProxyStartError, match=f"cannot listen on 127.0.0.1:{port}"):
            await second.start("127.0.0.1", port)
    finally:
        await first.aclose()


def test_a_row_finishing_as_the_proxy_dies_is_left_pending_not_a_crash(tmp_path: Path) -> None:
    """The moment between the child's exit and the handle noticing it: the pipe to the child is
    already closed. Finishing (or discarding) a row then must give ``ProxyGone`` (the row stays
    pending), not uvloop's ``RuntimeError`` on the closed pipe, which crashed ``eval run`` and
    left the row's future with an exception nobody retrieved. Run on uvloop, as ``eval run``."""
    factory = loop_factory()
    assert factory is not None, "the eval extra (uvloop) is installed in the test environment"
    unhandled: list[dict[str, Any]] = []

    async def scenario() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: unhandled.append(ctx))
        async with _started_proxy(TURNS, tmp_path / "c") as proxy:
            proxy.register("s")
            process = proxy._process  # pyright: ignore[reportPrivateUsage]
            assert process is not None
            assert process.stdin is not None
            os.kill(process.pid, signal.SIGKILL)
            finishing: list[asyncio.Task[CallSummary]] = []
            while proxy.gone is None:  # one loop turn at a time, to act inside that moment
                if process.stdin.is_closing():
                    proxy.discard("s")
                    finishing.append(asyncio.create_task(proxy.finish(f"r{len(finishing)}")))
                await asyncio.sleep(0)
            assert finishing, "the pipe closed before the handle noticed the exit"
            results = await asyncio.gather(*finishing, return_exceptions=True)
            assert all(isinstance(result, ProxyGone) for result in results), results

    asyncio.run(scenario(), loop_factory=factory)
    gc.collect()  # a future dropped with its exception unread is reported when collected
    assert unhandled == []
