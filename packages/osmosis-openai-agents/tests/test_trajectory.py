"""Building samples from items and recorded calls, on hand-written items (no HTTP)."""

from __future__ import annotations

from typing import Any

import pytest

from osmosis_ai.rollout.integrations.agents.openai_agents.trajectory import (
    chat_messages,
    with_instructions,
)
from osmosis_ai.rollout.integrations.spi import PolicyCall, usage_dict

USER = {"role": "user", "content": "2 * 3?"}
CALL = {"type": "function_call", "call_id": "c1", "name": "multiply", "arguments": '{"a":2,"b":3}'}
OUTPUT = {"type": "function_call_output", "call_id": "c1", "output": "6"}


def answer(text: str) -> dict[str, Any]:
    return {
        "id": "__fake_id__",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def call(
    position: int,
    instructions: str | None,
    *,
    ids: tuple[str, ...] = (),
    text: str | None = None,
    tokens: int = 10,
) -> PolicyCall:
    usage = {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1}
    return PolicyCall(
        model="policy-v1",
        usage=usage,
        position=position,
        instructions=instructions,
        call_ids=ids,
        text=text,
    )


def test_without_calls_the_items_are_copied_unchanged() -> None:
    items = [USER, answer("6")]
    messages = with_instructions(items, [])
    assert messages == items
    assert messages[0] is not USER


def test_instructions_go_first_and_again_where_they_change() -> None:
    calls = [call(1, "triage"), call(3, "specialist"), call(5, "specialist")]
    items = [USER, CALL, OUTPUT, CALL, OUTPUT, answer("6")]
    messages = with_instructions(items, calls)
    roles = [m.get("role") or m["type"] for m in messages]
    assert roles == [
        "system",
        "user",
        "function_call",
        "function_call_output",
        "system",
        "function_call",
        "function_call_output",
        "assistant",
    ]
    assert messages[0]["content"] == "triage"
    assert messages[4]["content"] == "specialist"


def test_positions_beyond_the_items_are_clamped_after_pops() -> None:
    messages = with_instructions([USER], [call(1, "a"), call(9, "b")])
    assert [m["content"] for m in messages] == ["a", "2 * 3?", "b"]


def test_usage_goes_to_the_assistant_message_each_call_produced() -> None:
    calls = [call(1, "sys", ids=("c1",), tokens=10), call(3, "sys", text="#### 6", tokens=20)]
    messages = with_instructions([USER, CALL, OUTPUT, answer("#### 6")], calls)
    chat = chat_messages(messages, calls)
    assert chat is not None
    assistants = [m for m in chat if m["role"] == "assistant"]
    assert assistants[0]["tool_calls"][0]["id"] == "c1"
    assert assistants[0]["usage"]["prompt_tokens"] == 10
    assert assistants[1]["usage"]["prompt_tokens"] == 20
    assert {m["model"] for m in assistants} == {"policy-v1"}


def test_an_assistant_message_no_call_produced_gets_nothing() -> None:
    calls = [call(2, None, text="#### 6")]
    chat = chat_messages([USER, answer("earlier answer"), answer("#### 6")], calls)
    assert chat is not None
    first, second = (m for m in chat if m["role"] == "assistant")
    assert "usage" not in first
    assert second["usage"]["total_tokens"] == 11


def test_unconvertible_items_give_no_trajectory(caplog: pytest.LogCaptureFixture) -> None:
    assert chat_messages([{"type": "no_such_item_type"}], []) is None
    assert "could not convert" in caplog.text


class _Usage:
    def __init__(self, input_tokens: int, output_tokens: int, total_tokens: int) -> None:
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.total_tokens = total_tokens


def test_usage_dict_maps_token_names_and_refuses_to_invent_zeros() -> None:
    assert usage_dict(_Usage(5, 2, 7)) == {
        "prompt_tokens": 5,
        "completion_tokens": 2,
        "total_tokens": 7,
    }
    assert usage_dict(_Usage(5, 2, 0))["total_tokens"] == 7  # type: ignore[index]
    assert usage_dict(_Usage(0, 0, 0)) is None
    assert usage_dict(None) is None
