"""ScriptedPolicyServer over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import httpx
import pytest

from osmosis_ai.testing import (
    ErrorReply,
    Reply,
    ScriptedPolicyServer,
    ToolCall,
    delayed,
    error_reply,
    text_reply,
    tool_call_reply,
)
from osmosis_ai.testing.policy_server import rollout_scope

USER = [{"role": "user", "content": "What is 6 times 7?"}]


def parse_sse(text: str) -> list[Any]:
    events: list[Any] = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        assert block.startswith("data: "), block
        data = block.removeprefix("data: ")
        events.append(data if data == "[DONE]" else json.loads(data))
    return events


async def post(url: str, body: dict[str, Any], **kwargs: Any) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.post(url + "/chat/completions", json=body, **kwargs)


async def test_non_streaming_shape_and_recording() -> None:
    async with ScriptedPolicyServer(["hello there"], model="m1") as server:
        response = await post(
            server.chat_completions_url("r-1"),
            {"model": "x", "messages": USER, "temperature": 0.3},
            headers={"Authorization": "Bearer secret-key"},
        )
        assert response.status_code == 200
        data = response.json()
        assert data["object"] == "chat.completion"
        assert data["id"].startswith("chatcmpl-")
        assert isinstance(data["created"], int)
        assert data["model"] == "m1"
        choice = data["choices"][0]
        assert choice["index"] == 0
        assert choice["message"]["role"] == "assistant"
        assert choice["message"]["content"] == "hello there"
        assert "tool_calls" not in choice["message"]
        assert choice["finish_reason"] == "stop"
        usage = data["usage"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        assert usage["completion_tokens"] >= 1

        [recorded] = server.requests
        assert recorded.path == "/v1/rollouts/r-1/chat/completions"
        assert recorded.rollout_id == "r-1"
        assert recorded.body["temperature"] == 0.3
        assert recorded.bearer_token == "secret-key"
        assert "secret-key" not in repr(recorded)
        assert server.requests_for("r-1") == [recorded]


async def test_tool_call_non_streaming() -> None:
    async with ScriptedPolicyServer([tool_call_reply("multiply", {"a": 6, "b": 7})]) as server:
        data = (await post(server.url, {"messages": USER})).json()
    message = data["choices"][0]["message"]
    [call] = message["tool_calls"]
    assert call["type"] == "function"
    assert call["id"]
    assert call["function"] == {"name": "multiply", "arguments": '{"a":6,"b":7}'}
    assert data["choices"][0]["finish_reason"] == "tool_calls"


async def test_streaming_text_with_usage() -> None:
    async with ScriptedPolicyServer([text_reply("one two three")]) as server:
        response = await post(
            server.url,
            {"messages": USER, "stream": True, "stream_options": {"include_usage": True}},
        )
    assert response.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(response.text)
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "one two three"
    assert len([c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]) == 3
    finals = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert [c["choices"][0]["finish_reason"] for c in finals] == ["stop"]
    usage_chunk = chunks[-1]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["total_tokens"] > 0
    assert all(c["usage"] is None for c in chunks[:-1])


async def test_streaming_tool_call_deltas_reassemble() -> None:
    reply = Reply(
        tool_calls=(
            ToolCall("multiply", {"a": 6, "b": 7}, id="call_a"),
            ToolCall("lookup", '{"q": "x"}'),
        )
    )
    async with ScriptedPolicyServer([reply]) as server:
        response = await post(server.url, {"messages": USER, "stream": True})
    events = parse_sse(response.text)
    assert events[-1] == "[DONE]"
    calls: dict[int, dict[str, str]] = {}
    for chunk in events[:-1]:
        assert "usage" not in chunk  # no include_usage requested
        for delta_call in chunk["choices"][0]["delta"].get("tool_calls", []):
            entry = calls.setdefault(delta_call["index"], {"id": "", "name": "", "arguments": ""})
            if "id" in delta_call:
                entry["id"] = delta_call["id"]
            function = delta_call.get("function", {})
            entry["name"] += function.get("name", "")
            entry["arguments"] += function.get("arguments", "")
    assert calls[0] == {"id": "call_a", "name": "multiply", "arguments": '{"a":6,"b":7}'}
    assert calls[1]["name"] == "lookup"
    assert json.loads(calls[1]["arguments"]) == {"q": "x"}
    # arguments arrive in more than one piece, as OpenAI streams them
    pieces = [
        c
        for c in events[:-1]
        if any(
            "arguments" in (d.get("function") or {}) and d["function"]["arguments"]
            for d in c["choices"][0]["delta"].get("tool_calls", [])
        )
    ]
    assert len(pieces) >= 3
    assert events[-2]["choices"][0]["finish_reason"] == "tool_calls"


async def test_script_is_consumed_per_rollout_scope_and_exhaustion_is_explicit() -> None:
    async with ScriptedPolicyServer(["first", "second"]) as server:
        a1 = (await post(server.chat_completions_url("a"), {"messages": USER})).json()
        b1 = (await post(server.chat_completions_url("b"), {"messages": USER})).json()
        a2 = (await post(server.chat_completions_url("a"), {"messages": USER})).json()
        a3 = await post(server.chat_completions_url("a"), {"messages": USER})
    assert a1["choices"][0]["message"]["content"] == "first"
    assert b1["choices"][0]["message"]["content"] == "first"
    assert a2["choices"][0]["message"]["content"] == "second"
    assert a3.status_code == 500
    assert "no turn 3 for rollout 'a'" in a3.json()["error"]["message"]


async def test_error_and_delayed_replies() -> None:
    script = [
        error_reply(503, "overloaded"),
        ErrorReply(429, {"error": {"message": "slow down", "type": "rate_limit"}}),
        delayed(0.05, "late"),
    ]
    async with ScriptedPolicyServer(script) as server:
        first = await post(server.url, {"messages": USER})
        second = await post(server.url, {"messages": USER, "stream": True})
        third = await post(server.url, {"messages": USER})
    assert first.status_code == 503
    assert first.json()["error"]["message"] == "overloaded"
    assert second.status_code == 429
    assert second.json() == {"error": {"message": "slow down", "type": "rate_limit"}}
    assert third.json()["choices"][0]["message"]["content"] == "late"


async def test_delayed_reply_triggers_client_timeout() -> None:
    # connecting may be slow on a loaded machine; only the read must time out
    async with ScriptedPolicyServer([delayed(2.0, "too late")]) as server:
        with pytest.raises(httpx.ReadTimeout):
            async with httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=0.2)) as client:
                await client.post(server.url + "/chat/completions", json={"messages": USER})


async def test_callable_policy_sync_and_async() -> None:
    seen: list[dict[str, Any]] = []

    def sync_policy(body: dict[str, Any]) -> str:
        seen.append(body)
        return f"n={len(body['messages'])}"

    async def async_policy(body: dict[str, Any]) -> Reply:
        return Reply(content="async", usage={"prompt_tokens": 10, "completion_tokens": 2})

    async with ScriptedPolicyServer(sync_policy) as server:
        data = (await post(server.url, {"messages": USER * 3})).json()
    assert data["choices"][0]["message"]["content"] == "n=3"
    assert len(seen) == 1
    async with ScriptedPolicyServer(async_policy) as server:
        data = (await post(server.url, {"messages": USER})).json()
    assert data["usage"] == {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}


async def test_responder_bug_is_reported_as_500() -> None:
    def broken(body: dict[str, Any]) -> str:
        raise KeyError("oops")

    async with ScriptedPolicyServer(broken) as server:
        response = await post(server.url, {"messages": USER})
    assert response.status_code == 500
    assert "KeyError" in response.json()["error"]["message"]


async def test_invalid_requests_are_rejected_with_reasons() -> None:
    async with ScriptedPolicyServer("echo") as server, httpx.AsyncClient() as client:
        bad_json = await client.post(server.url + "/chat/completions", content=b"{nope")
        no_messages = await client.post(server.url + "/chat/completions", json={"model": "m"})
        wrong_path = await client.post(server.url + "/completions", json={"messages": USER})
        models = await client.get(server.url + "/models")
    assert bad_json.status_code == 400
    assert "not valid JSON" in bad_json.json()["error"]["message"]
    assert no_messages.status_code == 400
    assert "'messages'" in no_messages.json()["error"]["message"]
    assert wrong_path.status_code == 404
    assert models.json()["data"][0]["id"] == "scripted-policy"


def test_bad_policies_fail_at_construction() -> None:
    with pytest.raises(ValueError, match="unknown built-in policy 'nope'"):
        ScriptedPolicyServer("nope")
    with pytest.raises(TypeError, match="str, Reply or ErrorReply"):
        ScriptedPolicyServer([1])  # type: ignore[list-item]


def test_sync_context_manager_runs_in_a_thread() -> None:
    with ScriptedPolicyServer("echo") as server:
        response = httpx.post(server.url + "/chat/completions", json={"messages": USER})
        assert response.json()["choices"][0]["message"]["content"] == USER[0]["content"]
        assert len(server.requests) == 1
    with pytest.raises(httpx.ConnectError):
        httpx.post(server.url + "/chat/completions", json={"messages": USER})


def test_recording_can_be_disabled() -> None:
    with ScriptedPolicyServer("instant", max_recorded=0) as server:
        httpx.post(server.url + "/chat/completions", json={"messages": USER})
        assert server.requests == []


def test_rollout_scope_parsing() -> None:
    assert rollout_scope("/v1/rollouts/abc-1/chat/completions") == "abc-1"
    assert rollout_scope("/v1/chat/completions") is None
    assert rollout_scope("/rollouts/x/chat/completions/") == "x"


def test_module_entry_point_prints_url() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "osmosis_ai.testing.policy_server", "--policy", "multiply"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/v1")
        data = httpx.post(url + "/chat/completions", json={"messages": USER}, timeout=5).json()
        assert data["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "multiply"
    finally:
        process.terminate()
        assert process.wait(timeout=5) == 0
