"""End-to-end rollouts through LocalBackend (``osmosis_ai.testing.run_rollout``) over real HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest
from strands import ModelRetryStrategy, tool
from strands_multiply_rollout import (
    SYSTEM_PROMPT,
    MultiplyGrader,
    MultiplyWorkflow,
    multiply_prompt,
    multiply_workflow_config,
)

from osmosis_ai.rollout import policy as policy_layer
from osmosis_ai.rollout.agent_workflow import AgentWorkflow
from osmosis_ai.rollout.context import AgentWorkflowContext
from osmosis_ai.rollout.integrations.agents.strands import OsmosisRolloutModel, OsmosisStrandsAgent
from osmosis_ai.rollout.types import AgentWorkflowConfig, RolloutErrorCategory, RolloutStatus
from osmosis_ai.testing import (
    ScriptedPolicyServer,
    delayed,
    error_reply,
    run_rollout,
    text_reply,
    tool_call_reply,
)


def _config(**params: Any) -> AgentWorkflowConfig:
    """The template's config with different model params (the template object stays untouched)."""
    return multiply_workflow_config.model_copy(
        update={"model": OsmosisRolloutModel(params={"temperature": 1.0, **params})}
    )


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "non-streaming"])
async def test_template_rollout_earns_reward_one(stream: bool) -> None:
    async with ScriptedPolicyServer("multiply") as policy:
        result = await run_rollout(
            MultiplyWorkflow,
            MultiplyGrader,
            prompt=multiply_prompt(6, 7),
            label="42",
            policy=policy,
            workflow_config=_config(stream=stream),
            rollout_id="mul-1",
            api_key="rollout-key",
        )
        requests = policy.requests

    assert result.status == RolloutStatus.SUCCESS, result.err_message
    assert result.reward == 1.0
    assert result.sample is not None

    # Strands-native history: string content became blocks, the system message left the list.
    messages = result.sample.messages
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[0]["content"] == [{"text": "What is 6 times 7?"}]
    assert messages[1]["content"][0]["toolUse"]["input"] == {"a": 6, "b": 7}
    assert messages[2]["content"][0]["toolResult"]["content"] == [{"text": "42"}]
    assert messages[-1]["content"] == [{"text": "#### 42"}]

    # Each policy call went to this rollout's scoped URL with its key, in the requested mode.
    assert len(requests) == 2
    for request in requests:
        assert request.rollout_id == "mul-1"
        assert request.bearer_token == "rollout-key"
        assert request.stream is stream
        assert request.body["temperature"] == 1.0
        assert request.messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
        if not stream:
            assert "stream_options" not in request.body

    # Chat-completions trajectory: system first, usage and model on every policy answer.
    trajectory = result.sample.trajectory_messages
    assert trajectory is not None
    assert [m["role"] for m in trajectory] == ["system", "user", "assistant", "tool", "assistant"]
    answers = [m for m in trajectory if m["role"] == "assistant"]
    for answer in answers:
        assert answer["model"] == "scripted-policy"
        usage = answer["usage"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
    assert answers[0]["tool_calls"][0]["function"]["name"] == "multiply"
    json.dumps(trajectory)  # the trajectory writer needs plain JSON


async def test_explicit_system_prompt_is_kept_before_the_prompts_system_message() -> None:
    class Workflow(AgentWorkflow):
        async def run(self, ctx: AgentWorkflowContext) -> None:
            agent = OsmosisStrandsAgent(
                model=OsmosisRolloutModel(),
                messages=ctx.prompt,
                system_prompt="Be terse.",
            )
            await agent.invoke_async()

    async with ScriptedPolicyServer("echo") as policy:
        result = await run_rollout(Workflow, prompt=multiply_prompt(2, 3), policy=policy)
        sent = policy.requests[0].messages
    assert result.status == RolloutStatus.SUCCESS, result.err_message
    assert sent[0] == {"role": "system", "content": f"Be terse.\n\n{SYSTEM_PROMPT}"}


@tool
def explode(reason: str) -> str:
    """A tool that always fails."""
    raise RuntimeError(f"tool blew up: {reason}")


@tool
async def add_async(a: int, b: int) -> int:
    """Add two integers (an async tool)."""
    return a + b


class ToolWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext) -> None:
        agent = OsmosisStrandsAgent(
            model=OsmosisRolloutModel(), tools=[explode, add_async], messages=ctx.prompt
        )
        await agent.invoke_async()


async def test_a_tool_that_raises_becomes_an_error_result_the_policy_sees() -> None:
    script = [tool_call_reply("explode", {"reason": "on purpose"}), text_reply("#### 0")]
    async with ScriptedPolicyServer(script) as policy:
        result = await run_rollout(ToolWorkflow, prompt="go", policy=policy)
        second = policy.requests[1].messages
    assert result.status == RolloutStatus.SUCCESS, result.err_message
    assert result.sample is not None
    tool_result = result.sample.messages[2]["content"][0]["toolResult"]
    assert tool_result["status"] == "error"
    assert "tool blew up: on purpose" in json.dumps(tool_result)
    assert second[-1]["role"] == "tool"
    assert "tool blew up" in json.dumps(second[-1])
    # ... and the rollout records it as a fact (counted per row), not only as a reward-0 answer
    (error,) = result.sample.extra_fields["tool_errors"]
    assert error["tool"] == "explode"
    # "RuntimeError: ..." from the exception (newer Strands passes it to the hook), or
    # "RuntimeError - ..." from the error result older Strands makes of it
    assert error["message"].startswith("RuntimeError")
    assert error["message"].endswith("tool blew up: on purpose")
    assert error["call_id"]


async def test_async_tool_result_reaches_the_policy() -> None:
    script = [tool_call_reply("add_async", {"a": 40, "b": 2}), text_reply("#### 42")]
    async with ScriptedPolicyServer(script) as policy:
        result = await run_rollout(ToolWorkflow, prompt="add", policy=policy)
        tool_message = policy.requests[1].messages[-1]
    assert result.status == RolloutStatus.SUCCESS, result.err_message
    assert tool_message["role"] == "tool"
    assert "42" in json.dumps(tool_message["content"])


async def test_policy_http_500_is_an_http_error_with_status_and_body() -> None:
    script = [error_reply(500, "the policy worker crashed")]
    async with ScriptedPolicyServer(script) as policy:
        result = await run_rollout(
            MultiplyWorkflow,
            MultiplyGrader,
            prompt="6 * 7",
            label="42",
            policy=policy,
            workflow_config=_config(),
        )
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.HTTP_ERROR
    assert result.reward is None
    assert result.err_message is not None
    assert "HTTP 500" in result.err_message
    assert "the policy worker crashed" in result.err_message


class ThrottledWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext) -> None:
        # One attempt: Strands' default would back off 4 s, 8 s, ... before giving up.
        agent = OsmosisStrandsAgent(
            model=OsmosisRolloutModel(),
            messages=ctx.prompt,
            retry_strategy=ModelRetryStrategy(max_attempts=1),
        )
        await agent.invoke_async()


async def test_policy_still_throttling_after_strands_retries_is_an_http_error() -> None:
    async with ScriptedPolicyServer([error_reply(429, "slow down")]) as policy:
        result = await run_rollout(ThrottledWorkflow, prompt="hi", policy=policy)
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.HTTP_ERROR
    assert result.err_message is not None
    assert "HTTP 429" in result.err_message


async def test_policy_timeout_is_reported_as_timeout() -> None:
    config = multiply_workflow_config.model_copy(
        update={"model": OsmosisRolloutModel(params={"temperature": 1.0}, timeout=0.1)}
    )
    script = [delayed(0.5, tool_call_reply("multiply", {"a": 1, "b": 2}))]
    async with ScriptedPolicyServer(script) as policy:
        result = await run_rollout(
            MultiplyWorkflow,
            MultiplyGrader,
            prompt="1 * 2",
            label="2",
            policy=policy,
            workflow_config=config,
        )
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.TIMEOUT
    assert result.err_message is not None
    assert "timed out" in result.err_message


async def test_rollout_deadline_while_waiting_for_the_policy_is_a_timeout() -> None:
    script = [delayed(0.5, tool_call_reply("multiply", {"a": 1, "b": 2}))]
    async with ScriptedPolicyServer(script) as policy:
        result = await run_rollout(
            MultiplyWorkflow,
            MultiplyGrader,
            prompt="1 * 2",
            label="2",
            policy=policy,
            workflow_config=_config(),
            agent_timeout_sec=0.1,
        )
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.TIMEOUT


async def test_policy_unreachable_is_an_http_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # connection attempts are retried for a while (refused: never reached); not 30 s here
    monkeypatch.setattr(policy_layer, "POLICY_CONNECT_RETRY_BUDGET_SEC", 0.3)
    async with ScriptedPolicyServer("multiply") as policy:
        dead_url = policy.chat_completions_url("gone")
    result = await run_rollout(
        MultiplyWorkflow, prompt="1 * 2", policy=dead_url, workflow_config=_config()
    )
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.HTTP_ERROR
    assert result.err_message is not None
    assert "could not reach the policy" in result.err_message
