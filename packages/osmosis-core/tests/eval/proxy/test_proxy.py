"""The policy proxy over real HTTP, against the scripted policy server as upstream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from osmosis_ai.eval._impl.proxy.caller import UpstreamCaller
from osmosis_ai.eval._impl.proxy.calls import CallRecord, RetryPolicy
from osmosis_ai.eval._impl.proxy.policy_proxy import PolicyProxy
from osmosis_ai.eval._impl.proxy.upstream import Upstream
from osmosis_ai.testing import ErrorReply, ScriptedPolicyServer, tool_call_reply

FAST_RETRY = RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.02)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


def _upstream(policy: ScriptedPolicyServer, key: str | None = "upstream-key") -> Upstream:
    return Upstream(model="served-model", base_url=policy.url, api_key=key)


async def test_forwards_every_field_and_records_usage(http: httpx.AsyncClient) -> None:
    async with ScriptedPolicyServer(["#### 6"]) as policy, PolicyProxy(_upstream(policy)) as proxy:
        url, token = proxy.register("r1")
        body = {
            "model": "osmosis-rollout",
            "messages": [{"role": "user", "content": "2*3"}],
            "temperature": 0.3,
            "tool_choice": "auto",
            "stop": ["\n\n"],
            "response_format": {"type": "text"},
            "logprobs": True,
            "top_logprobs": 2,
            "seed": 7,
            "extra_vendor_field": {"keep": True},
        }
        response = await http.post(
            f"{url}/chat/completions", json=body, headers={"Authorization": f"Bearer {token}"}
        )
        assert response.status_code == 200
        assert response.json()["choices"][0]["message"]["content"] == "#### 6"
        sent = policy.requests[0]
        assert sent.body == {**body, "model": "served-model"}  # nothing dropped, model mapped
        assert sent.bearer_token == "upstream-key"  # the agent's token never leaves the proxy
        calls = proxy.unregister("r1")
    assert len(calls) == 1
    call = calls[0]
    assert call.status_code == 200
    assert call.attempts == 1
    assert call.usage is not None
    assert call.total_tokens == call.usage["total_tokens"] > 0
    assert call.logprobs is not None
    assert call.latency_ms > 0


async def test_per_rollout_auth(http: httpx.AsyncClient) -> None:
    async with ScriptedPolicyServer("instant") as policy, PolicyProxy(_upstream(policy)) as proxy:
        url_a, token_a = proxy.register("a")
        url_b, _token_b = proxy.register("b")
        body = {"messages": [{"role": "user", "content": "hi"}]}
        wrong = await http.post(
            f"{url_b}/chat/completions", json=body, headers={"Authorization": f"Bearer {token_a}"}
        )
        missing = await http.post(f"{url_a}/chat/completions", json=body)
        unknown = await http.post(f"{proxy.base_url}/v1/rollouts/zzz/chat/completions", json=body)
        ok = await http.post(
            f"{url_a}/chat/completions", json=body, headers={"authorization": f"bearer {token_a}"}
        )
        proxy.unregister("a")
        finished = await http.post(
            f"{url_a}/chat/completions", json=body, headers={"Authorization": f"Bearer {token_a}"}
        )
    assert (wrong.status_code, missing.status_code, unknown.status_code) == (401, 401, 404)
    assert ok.status_code == 200
    assert finished.status_code == 404
    assert "error" in wrong.json()
    assert len(policy.requests) == 1


async def test_streaming_is_passed_through_chunk_by_chunk(http: httpx.AsyncClient) -> None:
    async with (
        ScriptedPolicyServer(["one two three four"]) as policy,
        PolicyProxy(_upstream(policy)) as proxy,
    ):
        url, token = proxy.register("s")
        body = {
            "messages": [{"role": "user", "content": "count"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        events: list[str] = []
        async with http.stream(
            "POST",
            f"{url}/chat/completions",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
        ) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    events.append(line[6:])
        calls = proxy.unregister("s")
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "one two three four"
    assert len(chunks) > 2  # real deltas, not one aggregated chunk
    assert policy.requests[0].body["stream_options"] == {"include_usage": True}
    assert calls[0].stream
    assert calls[0].usage is not None
    assert calls[0].first_byte_ms is not None


async def test_upstream_429_and_500_are_retried(http: httpx.AsyncClient) -> None:
    script = [
        ErrorReply(429, "slow down"),
        ErrorReply(500, "boom"),
        tool_call_reply("multiply", {"a": 2, "b": 3}),
    ]
    events: list[str] = []
    async with (
        ScriptedPolicyServer(script) as policy,
        PolicyProxy(
            UpstreamCaller(
                _upstream(policy), retry=FAST_RETRY, on_event=lambda kind, d: events.append(kind)
            )
        ) as proxy,
    ):
        url, token = proxy.register("r")
        response = await http.post(
            f"{url}/chat/completions",
            json={"messages": [{"role": "user", "content": "2 3"}]},
            headers={"Authorization": f"Bearer {token}"},
        )
        calls = proxy.unregister("r")
    assert response.status_code == 200
    assert (
        response.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "multiply"
    )
    assert calls[0].attempts == 3
    assert events == ["upstream_retry", "upstream_retry"]


async def test_streaming_request_is_retried_before_any_byte(http: httpx.AsyncClient) -> None:
    async with (
        ScriptedPolicyServer([ErrorReply(503), "ok"]) as policy,
        PolicyProxy(UpstreamCaller(_upstream(policy), retry=FAST_RETRY)) as proxy,
    ):
        url, token = proxy.register("r")
        response = await http.post(
            f"{url}/chat/completions",
            json={"messages": [{"role": "user", "content": "x"}], "stream": True},
            headers={"Authorization": f"Bearer {token}"},
        )
    assert response.status_code == 200
    assert "data: [DONE]" in response.text


async def test_exhausted_retries_return_the_upstream_error(http: httpx.AsyncClient) -> None:
    retry = RetryPolicy(max_attempts=2, base_delay=0.01)
    async with (
        ScriptedPolicyServer([ErrorReply(500), ErrorReply(500, "still broken")]) as policy,
        PolicyProxy(UpstreamCaller(_upstream(policy), retry=retry)) as proxy,
    ):
        url, token = proxy.register("r")
        response = await http.post(
            f"{url}/chat/completions",
            json={"messages": []},
            headers={"Authorization": f"Bearer {token}"},
        )
        calls = proxy.unregister("r")
    assert response.status_code == 500
    assert "still broken" in response.text
    assert calls[0].error == "HTTP 500"
    assert calls[0].attempts == 2


async def test_unreachable_upstream_is_a_502_naming_the_upstream(http: httpx.AsyncClient) -> None:
    upstream = Upstream(model="m", base_url="http://user:hunter2@127.0.0.1:9/v1")
    async with PolicyProxy(
        UpstreamCaller(upstream, retry=RetryPolicy(max_attempts=2, base_delay=0.01))
    ) as proxy:
        url, token = proxy.register("r")
        response = await http.post(
            f"{url}/chat/completions",
            json={"messages": []},
            headers={"Authorization": f"Bearer {token}"},
        )
        # A rollout's error quoting the proxy route reads as the user's endpoint.
        quoted = proxy.public_text(f"HTTP 502 from {url}/chat/completions", "r")
    assert response.status_code == 502
    message = response.json()["error"]["message"]
    assert message.startswith(
        "the model endpoint http://***@127.0.0.1:9/v1 failed after 2 attempt(s): ConnectError"
    )
    assert quoted == "HTTP 502 from http://***@127.0.0.1:9/v1/chat/completions"


async def test_bad_body_and_models_route(http: httpx.AsyncClient) -> None:
    async with ScriptedPolicyServer("instant") as policy, PolicyProxy(_upstream(policy)) as proxy:
        url, token = proxy.register("r")
        auth = {"Authorization": f"Bearer {token}"}
        bad = await http.post(f"{url}/chat/completions", content=b"[1]", headers=auth)
        models = await http.get(f"{url}/models", headers=auth)
        health = await http.get(f"{proxy.base_url}/health")
    assert bad.status_code == 400
    assert models.json()["data"][0]["id"] == "served-model"
    assert health.status_code == 200


def test_token_ids_and_logprobs_are_collected() -> None:
    record = CallRecord(started_at=0.0, stream=True)
    record.absorb_response(
        {
            "prompt_token_ids": [1, 2],
            "choices": [{"token_ids": [5], "logprobs": {"content": [{"token": "a"}]}}],
        }
    )
    record.absorb_response(
        {
            "choices": [{"token_ids": [6], "logprobs": {"content": [{"token": "b"}]}}],
            "usage": {"prompt_tokens": 2, "completion_tokens": 2},
        }
    )
    assert record.prompt_token_ids == [1, 2]
    assert record.completion_token_ids == [5, 6]
    assert record.logprobs == {"content": [{"token": "a"}, {"token": "b"}]}
    assert record.total_tokens == 4
    assert record.to_json()["completion_token_ids"] == [5, 6]


# A stream the model server broke off, as llama.cpp's server sends it when its generation raises
# ("Automatic streaming tool choice is not supported" with chatml-function-calling): the role
# chunk, then [DONE] with no finish_reason, then (sometimes) a connection closed mid-body.
_ROLE_CHUNK = (
    b'data: {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": '
    b'[{"index": 0, "delta": {"role": "assistant"}, "finish_reason": null}]}\r\n\r\n'
)
_COMPLETE = (
    b'data: {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": '
    b'[{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}\r\n\r\n'
)
BROKEN_STREAMS = {
    "done without finish_reason": [_ROLE_CHUNK, b"data: [DONE]\r\n\r\n"],
    "closed mid-stream": [_ROLE_CHUNK, None],  # None: close without the final chunk
    "ended without finish_reason": [_ROLE_CHUNK],
}


async def _raw_sse_upstream(parts: list[bytes | None]) -> tuple[object, str]:
    """A loopback HTTP/1.1 server answering every POST with ``parts`` as a chunked SSE body."""
    import asyncio

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        await reader.readexactly(length)
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )
        for part in parts:
            if part is None:  # the server dies: no terminating chunk
                writer.close()
                return
            writer.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/v1"


@pytest.mark.parametrize("case", list(BROKEN_STREAMS))
async def test_a_stream_the_upstream_broke_off_reaches_the_rollout_as_an_error(case: str) -> None:
    """Passed on as it came, such a stream reads as a complete empty reply and the row is graded
    on it (reward 0 for an infrastructure failure); the openai client must raise instead."""
    import openai

    server, base_url = await _raw_sse_upstream(BROKEN_STREAMS[case])
    async with server, PolicyProxy(Upstream(model="m", base_url=base_url)) as proxy:  # type: ignore[attr-defined]
        url, token = proxy.register("r")
        client = openai.AsyncOpenAI(base_url=url, api_key=token, max_retries=0)
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        with pytest.raises(openai.APIError, match="stream broke off"):
            _ = [chunk async for chunk in stream]
        await client.close()
        (call,) = proxy.unregister("r")
    assert call.error is not None
    assert "finish_reason" in call.error or "interrupted" in call.error


async def test_a_complete_stream_is_not_marked_broken_even_if_the_connection_drops_after() -> None:
    import openai

    parts: list[bytes | None] = [_ROLE_CHUNK, _COMPLETE, b"data: [DONE]\r\n\r\n", None]
    server, base_url = await _raw_sse_upstream(parts)
    async with server, PolicyProxy(Upstream(model="m", base_url=base_url)) as proxy:  # type: ignore[attr-defined]
        url, token = proxy.register("r")
        client = openai.AsyncOpenAI(base_url=url, api_key=token, max_retries=0)
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        await client.close()
        (call,) = proxy.unregister("r")
    assert text == "hi"
    assert call.error is None
    assert call.finish_reason == "stop"
