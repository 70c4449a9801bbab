"""End to end through LocalBackend (``osmosis_ai.testing.run_rollout``) with real Pydantic AI
agents against the scripted policy on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from pydantic_ai import Agent, ModelRetry

from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext, Grader, GraderContext
from osmosis_ai.rollout import policy as policy_layer
from osmosis_ai.rollout.integrations.agents.pydantic_ai import (
    NoActiveRolloutError,
    OsmosisRolloutModel,
    PydanticAISampleSource,
)
from osmosis_ai.testing import (
    ScriptedPolicyServer,
    check_multiply_rollout,
    check_policy_http_error,
    delayed,
    run_multiply_rollouts,
    run_rollout,
    text_reply,
    tool_call_reply,
)

# Built at import time, long before any rollout: the model binds on every call.
agent = Agent(
    OsmosisRolloutModel(settings={"temperature": 1.0, "max_tokens": 1024}),
    instructions="You multiply numbers. Use the multiply tool, then answer as '#### <number>'.",
)


@agent.tool_plain
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def prompt_text(ctx: AgentWorkflowContext[Any]) -> str:
    return str(ctx.prompt[-1]["content"])


class MultiplyWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        await agent.run(prompt_text(ctx))


class StreamingWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        async with agent.run_stream(prompt_text(ctx)) as streamed:
            async for _ in streamed.stream_text():
                pass


def final_text(messages: Sequence[Mapping[str, Any]]) -> str:
    last = messages[-1]
    assert last["kind"] == "response"
    return "".join(p["content"] for p in last["parts"] if p["part_kind"] == "text")


class MultiplyGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        assert ctx.sample is not None
        answer = final_text(ctx.sample.messages).removeprefix("####").strip()
        ctx.set_reward(1.0 if answer == ctx.label else 0.0)


PROMPT = [{"role": "user", "content": "What is 12 times 34?"}]


@pytest.mark.parametrize("workflow", [MultiplyWorkflow, StreamingWorkflow])
async def test_template_rollout_earns_reward_one(
    multiply_policy: ScriptedPolicyServer, workflow: type[AgentWorkflow[Any]]
) -> None:
    result = await check_multiply_rollout(workflow, MultiplyGrader, multiply_policy)
    requests = multiply_policy.requests_for(result.rollout_id)
    assert len(requests) == 2
    assert requests[0].body.get("stream", False) is (workflow is StreamingWorkflow)
    assert requests[0].body["temperature"] == 1.0


async def test_the_sample_is_native_history_plus_a_chat_trajectory(
    multiply_policy: ScriptedPolicyServer,
) -> None:
    from osmosis_ai.rollout.trajectory import convert_sample_to_trajectory

    result = await run_rollout(
        MultiplyWorkflow, MultiplyGrader, prompt=PROMPT, label="408", policy=multiply_policy
    )
    assert result.sample is not None
    kinds = [m["kind"] for m in result.sample.messages]
    assert kinds == ["request", "response", "request", "response"]
    chat = result.sample.trajectory_messages
    assert chat is not None
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "tool", "assistant"]
    # What the policy saw last is the trajectory up to its answer.
    last_request = multiply_policy.requests_for(result.rollout_id)[-1]
    wire = [
        {k: m.get(k) for k in ("role", "content", "tool_call_id", "tool_calls")} for m in chat[:-1]
    ]
    assert [
        {k: m.get(k) for k in ("role", "content", "tool_call_id", "tool_calls")}
        for m in last_request.messages
    ] == wire
    document = convert_sample_to_trajectory(result.sample, rollout_id=result.rollout_id)
    assert document is not None
    agent_steps = [s for s in document["steps"] if s["source"] == "agent"]
    assert agent_steps[0]["tool_calls"][0]["function_name"] == "multiply"
    assert agent_steps[0]["observation"]["results"][0]["content"] == "408"
    assert agent_steps[1]["message"] == "#### 408"
    for step in agent_steps:
        assert step["model_name"] == "scripted-policy"  # the model the server reported
        assert step["metrics"]["prompt_tokens"] > 0


retrying = Agent(OsmosisRolloutModel(), instructions="Multiply with the tool.")


@retrying.tool_plain
def picky_multiply(a: int, b: int) -> int:
    """Multiply two integers (refuses odd numbers)."""
    if a % 2:
        raise ModelRetry(f"{a} is odd; pass an even number")
    return a * b


@retrying.tool_plain
def broken_multiply(a: int, b: int) -> int:
    """Multiply two integers (always fails)."""
    raise ArithmeticError(f"the multiplier is broken for {a} and {b}")


class RetryingWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        await retrying.run(prompt_text(ctx))


async def test_a_tool_error_for_the_model_is_recorded_as_a_tool_message() -> None:
    script = [
        tool_call_reply("picky_multiply", {"a": 3, "b": 2}),
        tool_call_reply("picky_multiply", {"a": 2, "b": 3}),
        text_reply("#### 6"),
    ]
    async with ScriptedPolicyServer(script) as policy:
        result = await run_rollout(
            RetryingWorkflow, MultiplyGrader, prompt="2 * 3?", label="6", policy=policy
        )
        second = policy.requests_for(result.rollout_id)[1]
    assert result.status == "success", result.err_message
    assert result.reward == 1.0
    assert second.messages[-1]["role"] == "tool"
    assert "3 is odd" in second.messages[-1]["content"]
    assert result.sample is not None
    retry = result.sample.messages[2]["parts"][0]
    # A retry prompt (1.x) or, from 2.x, a tool return with outcome "retried".
    assert retry["part_kind"] in {"retry-prompt", "tool-return"}
    assert result.sample.trajectory_messages is not None
    tool_messages = [m for m in result.sample.trajectory_messages if m["role"] == "tool"]
    assert tool_messages[0]["content"] == second.messages[-1]["content"]


async def test_a_tool_that_raises_fails_the_rollout_as_an_agent_error() -> None:
    async with ScriptedPolicyServer(
        [tool_call_reply("broken_multiply", {"a": 2, "b": 3})]
    ) as policy:
        result = await run_rollout(
            RetryingWorkflow, MultiplyGrader, prompt="2 * 3?", label="6", policy=policy
        )
    assert (result.status, result.err_category) == ("failure", "agent_error")
    assert result.err_message is not None
    assert "broken for 2 and 3" in result.err_message


@pytest.mark.parametrize("workflow", [MultiplyWorkflow, StreamingWorkflow])
async def test_policy_http_500_is_an_http_error(workflow: type[AgentWorkflow[Any]]) -> None:
    await check_policy_http_error(workflow, MultiplyGrader)


impatient = Agent(OsmosisRolloutModel(timeout=0.1))


class ImpatientWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        await impatient.run(prompt_text(ctx))


async def test_policy_timeout_is_a_timeout_failure() -> None:
    async with ScriptedPolicyServer([delayed(0.5, "#### 408")]) as policy:
        result = await run_rollout(
            ImpatientWorkflow, MultiplyGrader, prompt=PROMPT, label="408", policy=policy
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


async def test_outside_a_rollout_the_model_says_how_to_run_it() -> None:
    with pytest.raises(NoActiveRolloutError, match="OsmosisRolloutModel"):
        await agent.run("What is 2 times 3?")


helper = Agent(OsmosisRolloutModel(), instructions="You are the helper.")
boss = Agent(OsmosisRolloutModel(), instructions="Ask the helper.")


@boss.tool_plain
async def ask_helper(question: str) -> str:
    """Ask the helper agent."""
    return (await helper.run(question)).output


class BossWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        await boss.run(prompt_text(ctx))


async def test_a_sub_agent_reaches_the_rollout_and_stays_out_of_the_sample() -> None:
    script = [
        tool_call_reply("ask_helper", {"question": "2*3?"}),
        text_reply("6"),
        text_reply("#### 6"),
    ]
    async with ScriptedPolicyServer(script) as policy:
        result = await run_rollout(
            BossWorkflow, MultiplyGrader, prompt="2 * 3?", label="6", policy=policy
        )
        requests = policy.requests_for(result.rollout_id)
    assert result.status == "success", result.err_message
    assert result.reward == 1.0
    assert len(requests) == 3
    assert requests[1].messages[0]["content"] == "You are the helper."
    assert result.sample is not None
    assert len(result.sample.messages) == 4  # the boss's conversation only
    assert isinstance(PydanticAISampleSource(), PydanticAISampleSource)


async def test_concurrent_rollouts_share_one_agent(multiply_policy: ScriptedPolicyServer) -> None:
    results = await run_multiply_rollouts(
        MultiplyWorkflow, MultiplyGrader, multiply_policy, [(i, 7) for i in range(2, 10)]
    )
    assert [r.reward for r in results] == [1.0] * 8
    for result in results:
        assert len(multiply_policy.requests_for(result.rollout_id)) == 2


strict = Agent(OsmosisRolloutModel(), instructions="Answer as '#### <number>'.")


@strict.output_validator
def needs_marker(output: str) -> str:
    if not output.startswith("####"):
        raise ModelRetry("answer as '#### <number>'")
    return output


class StrictWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        await strict.run(prompt_text(ctx))


async def test_retry_feedback_without_a_tool_is_in_the_trajectory_as_sent() -> None:
    async with ScriptedPolicyServer([text_reply("6"), text_reply("#### 6")]) as policy:
        result = await run_rollout(
            StrictWorkflow, MultiplyGrader, prompt="2 * 3?", label="6", policy=policy
        )
        last = policy.requests_for(result.rollout_id)[-1]
    assert result.reward == 1.0, result.err_message
    assert result.sample is not None
    chat = result.sample.trajectory_messages
    assert chat is not None
    keys = ("role", "content")
    assert [{k: m.get(k) for k in keys} for m in chat[:-1]] == [
        {k: m.get(k) for k in keys} for m in last.messages
    ]
    assert "#### <number>" in chat[-2]["content"]
