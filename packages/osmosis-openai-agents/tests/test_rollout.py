"""End to end through LocalBackend (``osmosis_ai.testing.run_rollout``): rewards and failures.

The workflow and grader are written exactly like the public SDK's OpenAI Agents template.
"""

from __future__ import annotations

from typing import Any

import pytest
from agents import ModelSettings, Runner, function_tool

from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext, Grader, GraderContext
from osmosis_ai.rollout import policy as policy_layer
from osmosis_ai.rollout.integrations.agents.openai_agents import (
    OsmosisAgent,
    OsmosisMemorySession,
    OsmosisRolloutModel,
)
from osmosis_ai.testing import (
    Reply,
    ScriptedPolicyServer,
    ToolCall,
    check_multiply_rollout,
    check_policy_http_error,
    delayed,
    error_reply,
    run_rollout,
    text_reply,
    tool_call_reply,
)


@function_tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


agent = OsmosisAgent(
    name="multiplier",
    instructions="You multiply numbers. Use the multiply tool, then answer as '#### <number>'.",
    model=OsmosisRolloutModel(),
    model_settings=ModelSettings(temperature=1.0, top_p=1.0, max_tokens=1024),
    tools=[multiply],
)


class MultiplyWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        await Runner.run(agent, ctx.prompt, session=OsmosisMemorySession(), max_turns=8)  # pyright: ignore[reportArgumentType]


def last_assistant_text(messages: Any) -> str:
    for message in reversed(messages):
        if message.get("role") == "assistant":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(
                part.get("text", "") for part in content if part.get("type") == "output_text"
            )
    return ""


class MultiplyGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        assert ctx.sample is not None
        answer = last_assistant_text(ctx.sample.messages).removeprefix("####").strip()
        ctx.set_reward(1.0 if answer == ctx.label else 0.0)


PROMPT = [{"role": "user", "content": "What is 12 times 34?"}]


async def test_template_rollout_earns_reward_one(multiply_policy: ScriptedPolicyServer) -> None:
    result = await check_multiply_rollout(MultiplyWorkflow, MultiplyGrader, multiply_policy)
    assert result.sample is not None
    assert last_assistant_text(result.sample.messages) == "#### 408"
    assert len(multiply_policy.requests_for(result.rollout_id)) == 2


async def test_the_sample_becomes_an_atif_trajectory_with_per_call_metrics(
    multiply_policy: ScriptedPolicyServer,
) -> None:
    from osmosis_ai.rollout.trajectory import convert_sample_to_trajectory

    result = await run_rollout(
        MultiplyWorkflow, MultiplyGrader, prompt=PROMPT, label="408", policy=multiply_policy
    )
    assert result.sample is not None
    document = convert_sample_to_trajectory(result.sample, rollout_id=result.rollout_id)
    assert document is not None
    steps = document["steps"]
    assert [step["source"] for step in steps] == ["system", "user", "agent", "agent"]
    agent_steps = steps[2:]
    assert agent_steps[0]["tool_calls"][0]["function_name"] == "multiply"
    assert agent_steps[0]["observation"]["results"][0]["content"] == "408"
    assert agent_steps[1]["message"] == "#### 408"
    for step in agent_steps:
        assert step["model_name"] == "osmosis-rollout"
        assert step["metrics"]["prompt_tokens"] > 0
        assert step["metrics"]["completion_tokens"] > 0


async def test_wrong_answer_earns_zero_not_a_failure() -> None:
    script = [tool_call_reply("multiply", {"a": 12, "b": 34}), text_reply("#### 407")]
    async with ScriptedPolicyServer(script) as policy:
        result = await run_rollout(
            MultiplyWorkflow, MultiplyGrader, prompt=PROMPT, label="408", policy=policy
        )
    assert (result.status, result.reward) == ("success", 0.0)


@function_tool
def broken_multiply(a: int, b: int) -> int:
    """Multiply two integers (always fails)."""
    raise ArithmeticError(f"the multiplier is broken for {a} and {b}")


@function_tool(failure_error_function=None)
def strict_broken_multiply(a: int, b: int) -> int:
    """Multiply two integers (always fails, and the failure ends the run)."""
    raise ArithmeticError(f"strict multiplier refused {a} and {b}")


class BrokenToolWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        broken = agent.clone(tools=[broken_multiply])
        await Runner.run(broken, ctx.prompt, session=OsmosisMemorySession(), max_turns=8)  # pyright: ignore[reportArgumentType]


class StrictBrokenToolWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        broken = agent.clone(tools=[strict_broken_multiply])
        await Runner.run(broken, ctx.prompt, session=OsmosisMemorySession(), max_turns=8)  # pyright: ignore[reportArgumentType]


async def test_a_tool_that_raises_is_reported_to_the_model() -> None:
    script = [tool_call_reply("broken_multiply", {"a": 2, "b": 3}), text_reply("#### 6")]
    async with ScriptedPolicyServer(script) as policy:
        result = await run_rollout(
            BrokenToolWorkflow, MultiplyGrader, prompt="2 * 3?", label="6", policy=policy
        )
        second_request = policy.requests_for(result.rollout_id)[1]
    assert result.status == "success", result.err_message
    assert result.reward == 1.0
    assert result.sample is not None
    output = next(m for m in result.sample.messages if m.get("type") == "function_call_output")
    # The SDK turns the exception into a tool result (its wording varies across versions).
    assert "error occurred while running the tool" in output["output"].lower()
    assert second_request.messages[-1]["role"] == "tool"
    assert second_request.messages[-1]["content"] == output["output"]
    # ... and the rollout records the exception as a fact (counted per row)
    (error,) = result.sample.extra_fields["tool_errors"]
    assert error["tool"] == "broken_multiply"
    assert error["message"] == "ArithmeticError: the multiplier is broken for 2 and 3"


async def test_a_tool_that_raises_without_an_error_function_fails_the_rollout() -> None:
    script = [tool_call_reply("strict_broken_multiply", {"a": 2, "b": 3})]
    async with ScriptedPolicyServer(script) as policy:
        result = await run_rollout(
            StrictBrokenToolWorkflow, MultiplyGrader, prompt="2 * 3?", label="6", policy=policy
        )
    assert result.status == "failure"
    assert result.err_category == "agent_error"
    assert result.err_message is not None
    assert "strict multiplier refused 2 and 3" in result.err_message


async def test_policy_http_500_is_an_http_error_with_status_and_body() -> None:
    result = await check_policy_http_error(MultiplyWorkflow, MultiplyGrader)
    assert result.reward is None


async def test_policy_500_while_streaming_is_an_http_error() -> None:
    class StreamingWorkflow(AgentWorkflow):
        async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
            streamed = Runner.run_streamed(agent, ctx.prompt, session=OsmosisMemorySession())  # pyright: ignore[reportArgumentType]
            async for _ in streamed.stream_events():
                pass

    async with ScriptedPolicyServer([error_reply(503, "overloaded, retry later")]) as policy:
        result = await run_rollout(StreamingWorkflow, prompt=PROMPT, policy=policy, grade=False)
    assert (result.status, result.err_category) == ("failure", "http_error")
    assert result.err_message is not None
    assert "HTTP 503" in result.err_message
    assert "overloaded, retry later" in result.err_message


class ImpatientWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        impatient = agent.clone(model=OsmosisRolloutModel(timeout=0.1))
        await Runner.run(impatient, ctx.prompt, session=OsmosisMemorySession())  # pyright: ignore[reportArgumentType]


async def test_policy_timeout_is_a_timeout_failure() -> None:
    async with ScriptedPolicyServer([delayed(0.5, "#### 408")]) as policy:
        result = await run_rollout(
            ImpatientWorkflow, MultiplyGrader, prompt=PROMPT, label="408", policy=policy
        )
    assert result.status == "failure"
    assert result.err_category == "timeout"
    assert result.err_message is not None
    assert "timed out" in result.err_message


async def test_slow_policy_past_the_agent_deadline_is_a_timeout() -> None:
    async with ScriptedPolicyServer([delayed(0.5, "#### 408")]) as policy:
        result = await run_rollout(
            MultiplyWorkflow,
            MultiplyGrader,
            prompt=PROMPT,
            label="408",
            policy=policy,
            agent_timeout_sec=0.1,
        )
    assert (result.status, result.err_category) == ("failure", "timeout")


async def test_unreachable_policy_is_an_http_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # connection attempts are retried for a while (refused: never reached); not 30 s here
    monkeypatch.setattr(policy_layer, "POLICY_CONNECT_RETRY_BUDGET_SEC", 0.3)
    result = await run_rollout(
        MultiplyWorkflow,
        MultiplyGrader,
        prompt=PROMPT,
        label="408",
        policy="http://127.0.0.1:9/v1/rollouts/r-unreachable",
    )
    assert (result.status, result.err_category) == ("failure", "http_error")
    assert result.err_message is not None
    assert "could not reach the policy" in result.err_message


def always_multiply(body: dict[str, Any]) -> Reply:
    return Reply(tool_calls=(ToolCall(name="multiply", arguments={"a": 1, "b": 2}),))


async def test_max_turns_exhaustion_is_an_agent_error() -> None:
    async with ScriptedPolicyServer(always_multiply) as policy:
        result = await run_rollout(
            MultiplyWorkflow, MultiplyGrader, prompt=PROMPT, label="408", policy=policy
        )
        calls = len(policy.requests_for(result.rollout_id))
    assert result.status == "failure"
    assert result.err_category == "agent_error"
    assert result.err_message is not None
    assert "Max turns (8) exceeded" in result.err_message
    assert calls == 8
