"""Property: any chat history converts to a valid, JSON-encodable ATIF document."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from osmosis_ai.rollout import RolloutSample
from osmosis_ai.rollout.trajectory import convert_sample_to_trajectory, dumps_trajectory

_content = (
    st.none()
    | st.text(max_size=30)
    | st.lists(
        st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=10)}), max_size=3
    )
)
_message = st.fixed_dictionaries(
    {
        "role": st.sampled_from(
            ["system", "developer", "user", "assistant", "tool", "function", "other"]
        ),
        "content": _content,
    },
    optional={
        "tool_call_id": st.text(max_size=5),
        "model": st.text(max_size=5),
        "usage": st.fixed_dictionaries(
            {"prompt_tokens": st.integers(0, 10**6), "completion_tokens": st.integers(0, 10**6)}
        ),
        "completion_token_ids": st.lists(st.integers(0, 10**5), max_size=5),
    },
)


@settings(max_examples=80, deadline=None)
@given(messages=st.lists(_message, max_size=12))
def test_any_history_converts(messages: list[dict[str, Any]]) -> None:
    doc = convert_sample_to_trajectory(RolloutSample(messages=messages), rollout_id="p")
    assert doc is not None
    steps = doc["steps"]
    assert [s["step_id"] for s in steps] == list(range(1, len(steps) + 1))
    assert doc["final_metrics"]["total_steps"] == len(steps)
    assert all(s["source"] in {"system", "user", "agent"} for s in steps)
    folded = 0
    seen_agent = False
    for message in messages:
        if message["role"] == "assistant":
            seen_agent = True
        elif message["role"] in {"tool", "function"} and seen_agent:
            folded += 1
    assert len(steps) == len(messages) - folded
    assert json.loads(dumps_trajectory(doc)) == json.loads(json.dumps(doc))
