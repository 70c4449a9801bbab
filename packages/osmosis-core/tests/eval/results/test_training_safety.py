"""check_append_only on hand-built call lists: each cause at the right position, threads, tokens."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from osmosis_ai.eval import check_append_only, expand_calls
from osmosis_ai.eval._impl.proxy.calls import CallRecord, compact_calls
from osmosis_ai.eval._impl.results.safety_summary import (
    describe_training_safety,
    summarize_training_safety,
)
from osmosis_ai.testing.tokens import completion_token_ids, prompt_token_ids

SYSTEM = {"role": "system", "content": "You multiply."}
USER = {"role": "user", "content": "What is 2 times 3?"}
CALL_1 = {
    "role": "assistant",
    "content": None,
    "reasoning_content": "I should use the tool.",
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "multiply", "arguments": '{"a":2,"b":3}'},
        }
    ],
}
TOOL_1 = {"role": "tool", "tool_call_id": "call_1", "content": "6"}
CALL_2 = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_2",
            "type": "function",
            "function": {"name": "multiply", "arguments": '{"a":6,"b":1}'},
        }
    ],
}
TOOL_2 = {"role": "tool", "tool_call_id": "call_2", "content": "6"}
ANSWER = {"role": "assistant", "content": "#### 6"}


def _with_ids(call: dict[str, Any]) -> dict[str, Any]:
    return {
        **call,
        "prompt_token_ids": prompt_token_ids(call["messages"]),
        "completion_token_ids": completion_token_ids(call["response"]),
    }


def safe_calls(ids: bool = False) -> list[dict[str, Any]]:
    first = [SYSTEM, USER]
    second = [*first, CALL_1, TOOL_1]
    third = [*second, CALL_2, TOOL_2]
    calls = [
        {"messages": first, "response": CALL_1},
        {"messages": second, "response": CALL_2},
        {"messages": third, "response": ANSWER, "finish_reason": "stop"},
    ]
    return [_with_ids(c) for c in calls] if ids else copy.deepcopy(calls)


def test_a_faithful_rollout_is_append_only() -> None:
    verdict = check_append_only(safe_calls())
    assert verdict.append_only
    assert (verdict.calls, verdict.threads, verdict.divergence) == (3, 1, None)
    assert verdict.token_ids == "none"
    assert verdict.to_json() == {"append_only": True, "calls": 3, "threads": 1, "token_ids": "none"}


def test_content_as_one_text_part_equals_the_string() -> None:
    calls = safe_calls()
    calls[1]["messages"][1] = {
        "role": "user",
        "content": [{"type": "text", "text": USER["content"]}],
    }
    assert check_append_only(calls).append_only


def _break(mutate: Any, call: int = 2) -> Any:
    calls = safe_calls()
    mutate(calls[call]["messages"])
    verdict = check_append_only(calls)
    assert not verdict.append_only
    assert verdict.divergence is not None
    return verdict.divergence


def test_tool_arguments_reserialised() -> None:
    def mutate(messages: list[dict[str, Any]]) -> None:
        message = copy.deepcopy(messages[2])
        args = message["tool_calls"][0]["function"]
        args["arguments"] = json.dumps(json.loads(args["arguments"]))  # '{"a": 2, "b": 3}'
        messages[2] = message

    d = _break(mutate)
    assert (d.call, d.message, d.field, d.cause) == (
        2,
        2,
        "tool_calls[0].function.arguments",
        "tool_args_reformatted",
    )
    assert (d.expected, d.actual) == ('{"a":2,"b":3}', '{"a": 2, "b": 3}')


def test_reasoning_dropped() -> None:
    def mutate(messages: list[dict[str, Any]]) -> None:
        messages[2] = {k: v for k, v in messages[2].items() if k != "reasoning_content"}

    d = _break(mutate)
    assert (d.call, d.message, d.field, d.cause) == (2, 2, "reasoning_content", "reasoning_dropped")


def test_middle_message_edited() -> None:
    def mutate(messages: list[dict[str, Any]]) -> None:
        messages[3] = {**messages[3], "content": "6 (checked)"}

    d = _break(mutate)
    assert (d.call, d.message, d.field, d.cause) == (2, 3, "content", "history_edited")
    assert (d.expected, d.actual) == ("6", "6 (checked)")


def test_changed_arguments_are_an_edit_not_a_reformat() -> None:
    def mutate(messages: list[dict[str, Any]]) -> None:
        message = copy.deepcopy(messages[2])
        message["tool_calls"][0]["function"]["arguments"] = '{"a":2,"b":4}'
        messages[2] = message

    assert _break(mutate).cause == "history_edited"


def test_history_truncated() -> None:
    def mutate(messages: list[dict[str, Any]]) -> None:
        del messages[1:3]  # a sliding window dropped the oldest user turn and the first call

    d = _break(mutate)
    assert (d.call, d.message, d.cause) == (2, 1, "history_truncated")


def test_system_prompt_changed() -> None:
    def mutate(messages: list[dict[str, Any]]) -> None:
        messages[0] = {"role": "system", "content": "You multiply. Today is Tuesday."}

    d = _break(mutate, call=1)
    assert (d.call, d.message, d.field, d.cause) == (1, 0, "content", "system_changed")


def test_only_the_first_divergence_is_reported() -> None:
    calls = safe_calls()
    calls[1]["messages"][0] = {"role": "system", "content": "changed"}
    calls[2]["messages"][3] = {**TOOL_1, "content": "edited"}
    assert check_append_only(calls).divergence.call == 1  # type: ignore[union-attr]


def test_two_sub_agents_and_a_handoff_are_threads_not_breaks() -> None:
    researcher = {"role": "system", "content": "You research."}
    writer = {"role": "system", "content": "You write."}
    task_a = {"role": "user", "content": "find facts"}
    task_b = {"role": "user", "content": "write it up"}
    facts = {"role": "assistant", "content": "facts"}
    text = {"role": "assistant", "content": "text"}
    calls = [
        *safe_calls()[:2],
        {"messages": [researcher, task_a], "response": facts},  # sub-agent 1
        {"messages": [writer, task_b], "response": text},  # sub-agent 2
        {"messages": [researcher, task_a, facts, task_b], "response": facts},  # sub-agent 1 again
        {"messages": [*safe_calls()[2]["messages"]], "response": ANSWER},  # the parent resumes
    ]
    verdict = check_append_only(calls)
    assert verdict.append_only, verdict.divergence
    assert verdict.threads == 3
    handoff = [
        {"messages": [SYSTEM, USER], "response": CALL_1, "tools": ["multiply"]},
        {"messages": [writer, USER, CALL_1, TOOL_1], "response": ANSWER, "tools": ["write"]},
    ]
    assert check_append_only(handoff).threads == 2


def test_token_ids_consistent_and_an_injected_mismatch() -> None:
    calls = safe_calls(ids=True)
    verdict = check_append_only(calls)
    assert verdict.append_only
    assert verdict.token_ids == "all"
    expected_len = len(calls[1]["prompt_token_ids"]) + len(calls[1]["completion_token_ids"])
    assert calls[2]["prompt_token_ids"][:expected_len] == (
        calls[1]["prompt_token_ids"] + calls[1]["completion_token_ids"]
    )
    position = len(calls[1]["prompt_token_ids"]) + 3
    calls[2]["prompt_token_ids"][position] += 1  # e.g. a separator token re-rendered
    verdict = check_append_only(calls)
    assert not verdict.append_only
    assert verdict.divergence is None  # the messages were fine; only the ids drifted
    assert verdict.cause == "token_mismatch"
    mismatch = verdict.token_mismatch
    assert mismatch is not None
    assert (mismatch.call, mismatch.position) == (2, position)
    assert mismatch.actual == mismatch.expected + 1  # type: ignore[operator]


def test_length_truncated_calls_are_flagged() -> None:
    calls = safe_calls()
    calls[2]["finish_reason"] = "length"
    verdict = check_append_only(calls)
    assert verdict.truncated_calls == [2]
    assert verdict.to_json()["truncated_calls"] == [2]


def test_call_records_are_accepted_and_compacted_losslessly() -> None:
    records = []
    for call in safe_calls():
        record = CallRecord(started_at=0.0, stream=False)
        record.messages, record.response = call["messages"], call["response"]
        records.append(record)
    assert check_append_only(records).append_only
    compact = compact_calls(records)
    assert "messages" in compact[0]
    assert "messages" not in compact[2]
    assert compact[2]["messages_from"] == {"call": 1, "count": 5}
    assert compact[2]["messages_suffix"] == [TOOL_2]
    assert [c["messages"] for c in expand_calls(compact)] == [r.messages for r in records]


@pytest.mark.parametrize("ids", [0, 3])
def test_summary_and_console_line(ids: int) -> None:
    verdicts: list[dict[str, Any] | None] = [
        {"append_only": True, "token_ids": "all" if i < ids else "none"} for i in range(196)
    ]
    verdicts += [
        {"append_only": False, "divergence": {"cause": "tool_args_reformatted"}},
        {"append_only": False, "divergence": {"cause": "tool_args_reformatted"}},
        {"append_only": False, "divergence": {"cause": "tool_args_reformatted"}},
        {"append_only": False, "divergence": {"cause": "reasoning_dropped"}},
        None,  # no policy call: not a rollout to check
    ]
    summary = summarize_training_safety(verdicts)
    assert summary["rollouts"] == 200
    assert summary["broken"] == 4
    line = describe_training_safety(summary)
    expected = (
        "196/200 rollouts append-only; 4 break it: 3 \N{MULTIPLICATION SIGN} tool_args_reformatted, "
        "1 \N{MULTIPLICATION SIGN} reasoning_dropped; "
    )
    tail = (
        "token ids: 0/200 rows (not requested: enable with --token-ids (vLLM))"
        if ids == 0
        else "token ids: 3/200 rows"
    )
    assert line == expected + tail


@pytest.mark.parametrize(
    ("requested", "reason"),
    [
        (None, "not requested: enable with --token-ids (vLLM)"),
        (False, "not requested: enable with --token-ids (vLLM)"),
        (
            True,
            "requested with --token-ids, but the upstream returned none (vLLM returns them; "
            "most other servers do not)",
        ),
    ],
)
def test_the_console_line_says_why_token_ids_are_missing(
    requested: bool | None, reason: str
) -> None:
    """`--token-ids` against a server that returns none must not say "enable with --token-ids"."""
    verdicts = [{"append_only": True, "token_ids": "none"} for _ in range(4)]
    summary = summarize_training_safety(verdicts, token_ids_requested=requested)
    assert ("token_ids_requested" in summary) is (requested is not None)
    assert describe_training_safety(summary) == (
        f"4/4 rollouts append-only; token ids: 0/4 rows ({reason})"
    )


def test_no_reason_is_given_when_rows_carry_token_ids() -> None:
    summary = summarize_training_safety(
        [{"append_only": True, "token_ids": "all"}], token_ids_requested=True
    )
    assert describe_training_safety(summary) == "1/1 rollouts append-only; token ids: 1/1 rows"
