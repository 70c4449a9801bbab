"""OsmosisMemorySession: the Session protocol, one session per rollout, and the sample it gives."""

from __future__ import annotations

from typing import Any

import pytest
from agents import Runner, function_tool
from agents.memory import Session

from osmosis_ai.errors import OsmosisError
from osmosis_ai.rollout import RolloutContext
from osmosis_ai.rollout.integrations.agents.openai_agents import (
    OsmosisAgent,
    OsmosisMemorySession,
    SessionNotRegisteredError,
    SessionSampleSource,
)
from osmosis_ai.testing import ScriptedPolicyServer


@function_tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


AGENT = OsmosisAgent(name="calc", instructions="Answer as '#### n'.", tools=[multiply])


def item(text: str) -> Any:
    return {"role": "user", "content": text}


async def test_implements_the_session_protocol_outside_a_rollout() -> None:
    session = OsmosisMemorySession()
    protocol_view: object = session
    assert isinstance(protocol_view, Session)
    assert session.session_id.startswith("osmosis-")
    assert session.rollout_context is None
    await session.add_items([item("a"), item("b"), item("c")])
    assert await session.get_items() == [item("a"), item("b"), item("c")]
    assert await session.get_items(limit=2) == [item("b"), item("c")]
    assert await session.get_items(limit=0) == []
    assert await session.pop_item() == item("c")
    await session.clear_session()
    assert await session.get_items() == []
    assert await session.pop_item() is None


async def test_registers_itself_as_the_rollouts_sample_source() -> None:
    with RolloutContext(chat_completions_url="http://127.0.0.1:9/v1", rollout_id="r-s") as ctx:
        session = OsmosisMemorySession()
        assert ctx.sample_source is session
        assert session.session_id == "r-s"
        with pytest.raises(ValueError, match="already has a sample source"):
            OsmosisMemorySession()


async def test_a_session_created_outside_a_rollout_is_refused_inside_one_as_in_0_3_8() -> None:
    session = OsmosisMemorySession(session_id="outside")
    await session.add_items([item("before")])  # outside any rollout: a plain session
    with RolloutContext(chat_completions_url="http://x/v1", rollout_id="r-1") as ctx:
        with pytest.raises(RuntimeError) as caught:
            await session.add_items([item("hello")])
        with pytest.raises(SessionNotRegisteredError):
            await session.get_items()
        assert ctx.sample_source is None
    message = str(caught.value)
    assert message.startswith(
        "OsmosisMemorySession was used inside a RolloutContext it was not registered with. "
        "Construct the session inside the workflow run while the rollout context is active."
    )
    assert isinstance(caught.value, SessionNotRegisteredError)
    assert isinstance(caught.value, OsmosisError)
    assert await session.get_items() == [item("before")]


async def test_a_session_refuses_a_rollout_other_than_its_own() -> None:
    with RolloutContext(chat_completions_url="http://x/v1", rollout_id="r-1") as first:
        session = OsmosisMemorySession()
        await session.add_items([item("hello")])
        assert first.sample_source is session
    with (
        RolloutContext(chat_completions_url="http://x/v1", rollout_id="r-2"),
        pytest.raises(SessionNotRegisteredError, match="it belongs to rollout 'r-1'"),
    ):
        await session.get_items()


async def test_sample_keeps_instructions_native_items_and_per_call_usage(
    multiply_policy: ScriptedPolicyServer,
) -> None:
    url = multiply_policy.chat_completions_url("r-sample")
    with RolloutContext(chat_completions_url=url, rollout_id="r-sample") as ctx:
        await Runner.run(AGENT, "What is 4 * 5?", session=OsmosisMemorySession())
        sample = await ctx.get_sample()
    assert sample is not None
    kinds = [m.get("type", m.get("role")) for m in sample.messages]
    assert kinds == ["system", "user", "function_call", "function_call_output", "message"]
    assert sample.messages[0] == {"role": "system", "content": "Answer as '#### n'."}
    final = sample.messages[-1]
    assert final["content"][0] == {**final["content"][0], "type": "output_text", "text": "#### 20"}

    trajectory = sample.trajectory_messages
    assert trajectory is not None
    assert [m["role"] for m in trajectory] == ["system", "user", "assistant", "tool", "assistant"]
    assistants = [m for m in trajectory if m["role"] == "assistant"]
    assert assistants[0]["tool_calls"][0]["function"]["name"] == "multiply"
    assert assistants[1]["content"] == "#### 20"
    recorded = multiply_policy.requests_for("r-sample")
    for message in assistants:
        assert message["model"] == "osmosis-rollout"
        usage = message["usage"]
        assert set(usage) == {"prompt_tokens", "completion_tokens", "total_tokens"}
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
    assert len(recorded) == len(assistants)


async def test_sample_is_a_copy_and_prior_history_gets_no_invented_usage(
    multiply_policy: ScriptedPolicyServer,
) -> None:
    prompt: list[Any] = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "1 * 1?"},
        {"role": "assistant", "content": "#### 1"},
        {"role": "user", "content": "What is 2 * 21?"},
    ]
    url = multiply_policy.chat_completions_url("r-hist")
    with RolloutContext(chat_completions_url=url, rollout_id="r-hist") as ctx:
        session = OsmosisMemorySession()
        await Runner.run(AGENT, prompt, session=session)
        sample = await ctx.get_sample()
    assert sample is not None
    assert sample.trajectory_messages is not None
    # The agent's instructions come first (sent before everything), then the prompt as given.
    assert [m.get("content") for m in sample.messages[:3]] == [
        "Answer as '#### n'.",
        "Be terse.",
        "1 * 1?",
    ]
    assistants = [m for m in sample.trajectory_messages if m["role"] == "assistant"]
    assert "usage" not in assistants[0]
    assert "model" not in assistants[0]
    assert all("usage" in m for m in assistants[1:])
    sample.messages[0]["content"] = "mutated"  # type: ignore[index]
    assert (await session.get_items())[0]["content"] != "mutated"  # type: ignore[index]


async def test_session_sample_source_wraps_any_session() -> None:
    session = OsmosisMemorySession()
    await session.add_items([item("hi")])
    sample = await SessionSampleSource(session).get_sample()
    assert sample.messages == [item("hi")]
    preview = await session.get_preview(5)
    assert preview is not None
    assert preview.messages == [item("hi")]
