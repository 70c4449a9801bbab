"""The async ``Judge`` over real HTTP: concurrency, cache, usage, timeouts, tool-call output."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from osmosis_ai.eval.judge import (
    Judge,
    JudgeCache,
    ProviderRequestError,
    collect_judge_usage,
)
from osmosis_ai.testing import ScriptedPolicyServer, delayed, error_reply
from osmosis_ai.testing.judge import judge_verdict, scripted_judge

RUBRIC = "Award 1 for a correct product."


async def test_100_calls_run_concurrently_with_the_default_bound() -> None:
    slow = scripted_judge(lambda answer: judge_verdict(0.5, delay=0.2))
    async with ScriptedPolicyServer(slow, max_recorded=0) as s:
        judge = Judge("openai/gpt-4o-mini", base_url=s.url)
        results = await asyncio.gather(
            *(judge.score(solution_str=f"answer {i}", rubric=RUBRIC) for i in range(100))
        )
        seen_at_once = s.max_in_flight
    assert [r.score for r in results] == [0.5] * 100
    assert seen_at_once > 1
    assert seen_at_once <= judge.max_concurrency
    assert judge.usage.calls == 100


async def test_concurrency_bound_is_respected() -> None:
    slow = scripted_judge(lambda answer: judge_verdict(1.0, delay=0.05))
    async with ScriptedPolicyServer(slow, max_recorded=0) as s:
        judge = Judge("openai/m", base_url=s.url, max_concurrency=3)
        await asyncio.gather(*(judge.score(solution_str=f"a{i}", rubric=RUBRIC) for i in range(12)))
        assert s.max_in_flight == 3


async def test_cache_makes_regrading_free(tmp_path: Path) -> None:
    answers = [f"answer {i}" for i in range(5)]
    async with ScriptedPolicyServer(scripted_judge(lambda a: 0.75)) as s:
        judge = Judge("openai/m", base_url=s.url, cache=tmp_path / "cache")
        first = [await judge.score(solution_str=a, rubric=RUBRIC) for a in answers]
        calls_after_first = len(s.requests)
        again = Judge("openai/m", base_url=s.url, cache=JudgeCache(tmp_path / "cache"))
        second = [await again.score(solution_str=a, rubric=RUBRIC) for a in answers]
        calls_after_second = len(s.requests)
        # A different rubric is a different key: one more call.
        await again.score(solution_str=answers[0], rubric=RUBRIC + " Be strict.")
        calls_after_third = len(s.requests)
    assert calls_after_first == 5
    assert calls_after_second == 5  # zero calls on the second pass
    assert calls_after_third == 6
    assert [r.score for r in second] == [r.score for r in first] == [0.75] * 5
    assert all(r.call is not None and r.call.cached for r in second)
    assert again.usage.cached_calls == 5
    assert again.usage.requests == 1


async def test_cache_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OSMOSIS_JUDGE_CACHE", str(tmp_path / "env-cache"))
    async with ScriptedPolicyServer(scripted_judge(lambda a: 1.0)) as s:
        for _ in range(3):
            await Judge("openai/m", base_url=s.url).score(solution_str="same", rubric=RUBRIC)
        assert len(s.requests) == 1
    assert list((tmp_path / "env-cache").rglob("*.json"))


async def test_usage_is_collected_per_block_apart_from_the_policy() -> None:
    async with ScriptedPolicyServer(scripted_judge(lambda a: 1.0)) as s:
        judge = Judge("openai/m", base_url=s.url, prices=(2.0, 8.0))
        with collect_judge_usage() as row_one:
            await judge.score(solution_str="a", rubric=RUBRIC)
            await judge.score(solution_str="b", rubric=RUBRIC)
        with collect_judge_usage() as row_two:
            await judge.score(solution_str="c", rubric=RUBRIC)
    assert (row_one.calls, row_two.calls, judge.usage.calls) == (2, 1, 3)
    assert row_one.prompt_tokens > 0
    assert row_one.completion_tokens > 0
    expected = (row_one.prompt_tokens * 2.0 + row_one.completion_tokens * 8.0) / 1e6
    assert row_one.cost_usd == pytest.approx(expected)
    summary = row_one.as_dict()
    assert summary["calls"] == 2
    assert summary["models"] == ["openai/m"]


async def test_a_hosted_model_name_on_a_local_server_has_no_price() -> None:
    # The template's offline recipe: the judge keeps its openai/... name but calls the scripted
    # judge on 127.0.0.1, which must not be charged OpenAI's price.
    async with ScriptedPolicyServer(scripted_judge(lambda a: 1.0)) as s:
        judge = Judge("openai/gpt-4o-mini", base_url=s.url)
        with collect_judge_usage() as usage:
            await judge.score(solution_str="a", rubric=RUBRIC)
    assert usage.calls == 1
    assert usage.prompt_tokens > 0
    assert usage.cost_usd is None
    assert usage.as_dict()["unpriced_calls"] == 1


async def test_timeouts_are_retried_then_reported() -> None:
    script = [delayed(1.0, judge_verdict(1.0)), delayed(1.0, judge_verdict(1.0))]
    async with ScriptedPolicyServer(script) as s:
        judge = Judge("openai/m", base_url=s.url, timeout=0.1, max_retries=1, retry_base_delay=0.01)
        with (
            collect_judge_usage() as usage,
            pytest.raises(ProviderRequestError, match="timed out") as caught,
        ):
            await judge.score(solution_str="x", rubric=RUBRIC)
    assert caught.value.attempts == 2
    assert not isinstance(caught.value, TimeoutError)  # a judge failure, not the rollout's timeout
    assert usage.failed_calls == 1


async def test_tool_call_output_mode() -> None:
    async with ScriptedPolicyServer(scripted_judge(lambda a: 0.4, explanation="via tool")) as s:
        judge = Judge("openai/m", base_url=s.url, output_mode="tool")
        result = await judge.score(solution_str="x", rubric=RUBRIC)
        body = s.requests[0].body
    assert (result.score, result.explanation) == (0.4, "via tool")
    assert body["tool_choice"]["function"]["name"] == "submit_score"
    assert "response_format" not in body


async def test_auth_failure_is_not_retried_and_key_never_in_the_message() -> None:
    secret = "sk-very-secret-key-123"
    async with ScriptedPolicyServer(
        [error_reply(401, f"Incorrect API key provided: {secret}")]
    ) as s:
        judge = Judge("openai/m", base_url=s.url, api_key=secret)
        with pytest.raises(ProviderRequestError) as caught:
            await judge.score(solution_str="x", rubric=RUBRIC)
        assert len(s.requests) == 1
    assert caught.value.status_code == 401
    assert secret not in str(caught.value)
    assert secret not in repr(judge.target)


async def test_the_timeout_bounds_a_judge_that_trickles_its_reply() -> None:
    """``timeout`` is each attempt's total deadline, not the longest wait for one byte: a judge
    that sends its reply a byte every 0.05 s (each read well inside the timeout, 6 s in all)
    fails as timed out after 0.5 s instead of being waited for."""
    import json

    reply = json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": '{"score": 1, "explanation": "x"}'},
                }
            ],
        }
    ).encode()
    body = b" " * 120 + reply  # leading blanks: still the same JSON document
    served: list[int] = []

    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(
                next(
                    h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")
                ).split(b":")[1]
            )
            await reader.readexactly(length)
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n" % len(body)
            )
            for i, byte in enumerate(body):
                writer.write(bytes([byte]))
                await writer.drain()
                served.append(i)
                await asyncio.sleep(0.05 if i < 120 else 0)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(trickle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        judge = Judge(
            "openai/m", base_url=f"http://127.0.0.1:{port}/v1", timeout=0.5, max_retries=0
        )
        with pytest.raises(ProviderRequestError, match="timed out"):
            await judge.score(solution_str="x", rubric=RUBRIC)
    finally:
        server.close()
        await server.wait_closed()
    assert len(served) < len(body)  # the reply was abandoned, not read to its end
