"""PydanticAISampleSource on hand-built Pydantic AI messages, and the model's argument checks."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    UserPromptPart,
)

from osmosis_ai.errors import ConfigurationError
from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext
from osmosis_ai.rollout.integrations.agents.pydantic_ai import (
    OsmosisRolloutModel,
    PydanticAISampleSource,
)
from osmosis_ai.rollout.integrations.spi import translating_policy_errors
from osmosis_ai.testing import ScriptedPolicyServer, run_rollout


async def test_every_request_part_becomes_a_chat_message() -> None:
    source = PydanticAISampleSource()
    source.record([], ModelResponse(parts=[TextPart("ignored")]))  # nothing went in: ignored
    first = ModelRequest(
        parts=[SystemPromptPart("be brief"), UserPromptPart(["two", "parts"])],
        instructions="multiply",
    )
    answer = ModelResponse(parts=[TextPart("no tool")])
    retry = ModelRequest(
        parts=[
            RetryPromptPart(content="use the tool", tool_name="multiply", tool_call_id="c1"),
            RetryPromptPart(content="answer as #### n"),
        ]
    )
    source.record([first], ModelResponse(parts=[TextPart("draft")]))
    source.record([first, answer, retry], ModelResponse(parts=[TextPart("#### 6")]))
    other = ModelRequest(parts=[UserPromptPart("a sub-agent")])
    source.record([other], ModelResponse(parts=[TextPart("not in the sample")]))

    sample = await source.get_sample()
    assert [m["kind"] for m in sample.messages] == ["request", "response", "request", "response"]
    chat = sample.trajectory_messages
    assert chat is not None
    assert [m["role"] for m in chat] == [
        "system", "system", "user", "assistant", "tool", "user", "assistant",
    ]  # fmt: skip
    assert chat[0]["content"] == "multiply"
    assert chat[2]["content"] == '["two", "parts"]'
    assert "model" not in chat[3]  # not produced by a recorded call of this source
    assert chat[4]["tool_call_id"] == "c1"
    assert "use the tool" in chat[4]["content"]
    assert "usage" not in chat[-1]  # the response reported none
    preview = await source.get_preview(1)
    assert preview is not None
    assert [m["kind"] for m in preview.messages] == ["response"]
    assert preview.trajectory_messages is None
    empty = await source.get_preview(0)
    assert empty is not None
    assert empty.messages == []


agent_model = OsmosisRolloutModel()


class ExplicitMessagesWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> list[dict[str, Any]]:
        from pydantic_ai import Agent

        result = await Agent(agent_model).run("hi")
        # The workflow returns its own sample: the model records nothing.
        return [{"role": "assistant", "content": result.output}]


async def test_a_workflow_returning_its_own_messages_keeps_them() -> None:
    async with ScriptedPolicyServer(["hello"]) as policy:
        result = await run_rollout(
            ExplicitMessagesWorkflow, prompt="hi", policy=policy, grade=False
        )
    assert result.status == "success", result.err_message
    assert result.sample is not None
    assert result.sample.messages == [{"role": "assistant", "content": "hello"}]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"model_name": " "}, "non-empty"),
        ({"max_retries": -1}, "max_retries"),
        ({"timeout": 0}, "timeout"),
    ],
)
def test_bad_arguments_are_configuration_errors(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        OsmosisRolloutModel(**kwargs)


def test_errors_that_are_not_policy_failures_pass_through() -> None:
    with pytest.raises(KeyError), translating_policy_errors("http://127.0.0.1:9/v1", causes=True):
        raise KeyError("the agent's own bug")
