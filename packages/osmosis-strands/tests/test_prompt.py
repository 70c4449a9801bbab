"""Rollout prompts (OpenAI chat messages) converted to Strands messages."""

from __future__ import annotations

import copy

import pytest

from osmosis_ai.rollout.integrations.agents.strands.prompt import (
    PromptConversionError,
    merge_system_prompt,
    split_prompt,
)


def test_system_messages_leave_the_list_and_strings_become_blocks() -> None:
    prompt = [
        {"role": "system", "content": "Be exact."},
        {"role": "developer", "content": [{"type": "text", "text": "Use tools."}]},
        {"role": "user", "content": "val1 = 3\nval2 = 4"},
    ]
    original = copy.deepcopy(prompt)
    system, messages = split_prompt(prompt)
    assert system == ["Be exact.", "Use tools."]
    assert messages == [{"role": "user", "content": [{"text": "val1 = 3\nval2 = 4"}]}]
    assert prompt == original  # the caller's prompt is never mutated


def test_openai_tool_traffic_becomes_tool_use_and_tool_result_blocks() -> None:
    prompt = [
        {"role": "user", "content": "6 * 7 and 2 * 3"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "multiply", "arguments": '{"a": 6, "b": 7}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "multiply", "arguments": '{"a": 2, "b": 3}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "6"}]},
    ]
    _, messages = split_prompt(prompt)
    assert messages[1] == {
        "role": "assistant",
        "content": [
            {"toolUse": {"toolUseId": "c1", "name": "multiply", "input": {"a": 6, "b": 7}}},
            {"toolUse": {"toolUseId": "c2", "name": "multiply", "input": {"a": 2, "b": 3}}},
        ],
    }
    # Consecutive tool messages are one user turn, as Strands itself records tool results.
    assert messages[2] == {
        "role": "user",
        "content": [
            {"toolResult": {"toolUseId": "c1", "status": "success", "content": [{"text": "42"}]}},
            {"toolResult": {"toolUseId": "c2", "status": "success", "content": [{"text": "6"}]}},
        ],
    }
    assert len(messages) == 3


def test_native_strands_messages_pass_through_as_copies() -> None:
    native = {"role": "assistant", "content": [{"text": "hi"}], "tracking_id": "t1"}
    _, messages = split_prompt([native])
    assert messages == [native]
    assert messages[0] is not native


@pytest.mark.parametrize(
    ("prompt", "match"),
    [
        ([{"role": "robot", "content": "x"}], "role 'robot'"),
        (["just a string"], "expected a dict"),
        ([{"role": "user", "content": 3}], "content is a int"),
        ([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}], "'image_url'"),
        ([{"role": "tool", "content": "x"}], "without tool_call_id"),
        (
            [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{nope"}}],
                }
            ],
            "not JSON",
        ),
    ],
)
def test_unconvertible_prompts_are_rejected_with_the_reason(prompt: list, match: str) -> None:
    with pytest.raises(PromptConversionError, match=match):
        split_prompt(prompt)


def test_merge_system_prompt_keeps_the_explicit_one_first() -> None:
    assert merge_system_prompt(None, ["a", "b"]) == "a\n\nb"
    assert merge_system_prompt("mine", ["a"]) == "mine\n\na"
    assert merge_system_prompt([{"text": "mine"}], ["a"]) == [{"text": "mine"}, {"text": "a"}]
    assert merge_system_prompt("mine", []) == "mine"
    with pytest.raises(PromptConversionError, match="system_prompt must be"):
        merge_system_prompt(42, ["a"])
