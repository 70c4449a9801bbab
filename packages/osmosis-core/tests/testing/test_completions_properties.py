"""Property: a streamed reply reassembles to exactly the non-streaming reply."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from osmosis_ai.testing import Reply, ToolCall
from osmosis_ai.testing.completions import completion_object, stream_events

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
_calls = st.lists(
    st.builds(
        ToolCall,
        name=st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
        arguments=st.dictionaries(st.text(max_size=6), _json_values, max_size=4),
    ),
    max_size=3,
)


def reassemble(frames: list[bytes]) -> tuple[dict[str, Any], str | None, dict[str, Any] | None]:
    message: dict[str, Any] = {"content": ""}
    calls: dict[int, dict[str, str]] = {}
    finish: str | None = None
    usage = None
    assert frames[-1] == b"data: [DONE]\n\n"
    for frame in frames[:-1]:
        chunk = json.loads(frame.removeprefix(b"data: "))
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk["choices"]:
            delta = choice["delta"]
            message["content"] += delta.get("content") or ""
            for part in delta.get("tool_calls", []):
                call = calls.setdefault(part["index"], {"id": "", "name": "", "arguments": ""})
                call["id"] = part.get("id", call["id"])
                call["name"] += part.get("function", {}).get("name", "")
                call["arguments"] += part.get("function", {}).get("arguments", "")
            finish = choice["finish_reason"] or finish
    message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message, finish, usage


@settings(max_examples=60, deadline=None)
@given(content=st.none() | st.text(max_size=80), calls=_calls)
def test_stream_matches_non_streaming(content: str | None, calls: list[ToolCall]) -> None:
    reply = Reply(content=content, tool_calls=tuple(calls))
    body = {
        "messages": [{"role": "user", "content": "x"}],
        "stream_options": {"include_usage": True},
    }
    full = completion_object(body, reply, model="m", completion_id="chatcmpl-1")
    message, finish, usage = reassemble(
        list(stream_events(body, reply, model="m", completion_id="chatcmpl-1"))
    )
    expected = full["choices"][0]["message"]
    assert message["content"] == (expected["content"] or "")
    assert [
        {"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
        for c in expected.get("tool_calls", [])
    ] == message["tool_calls"]
    for call in message["tool_calls"]:
        json.loads(call["arguments"])
    assert finish == full["choices"][0]["finish_reason"]
    assert usage == full["usage"]
