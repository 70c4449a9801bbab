"""End to end through LocalBackend on a real HTTP scripted policy, with the real LangGraph SDK."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.prebuilt import ToolNode, create_react_agent

from osmosis_ai.errors import NoActiveRolloutError
from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext, Grader, GraderContext
from osmosis_ai.rollout.integrations.agents.langgraph import GraphSampleSource, OsmosisChatModel
from osmosis_ai.testing import (
    ScriptedPolicyServer,
    check_multiply_rollout,
    error_reply,
    run_multiply_rollouts,
    run_rollout,
    text_reply,
    tool_call_arguments,
    tool_call_reply,
)


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


@tool
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


SYSTEM = "Use the multiply tool, then answer as '#### <number>'."
# Built at import time, once, and shared by every rollout.
model = OsmosisChatModel(temperature=1.0, max_tokens=1024)
# handle_tool_errors=True: a tool that raises becomes a ToolMessage with status "error" that the
# policy sees (LangGraph's default re-raises anything but an argument error).
agent = create_react_agent(
    model, ToolNode([multiply, divide], handle_tool_errors=True), prompt=SYSTEM
)


class AsyncWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        await agent.ainvoke({"messages": ctx.prompt})


class StreamingWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        async for _ in agent.astream({"messages": ctx.prompt}, stream_mode="messages"):
            pass


class BlockingWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        # The blocking API from async code: in a thread (which carries the rollout context), so
        # the event loop stays free.
        await asyncio.to_thread(agent.invoke, {"messages": ctx.prompt})


def last_ai_text(messages: Sequence[Mapping[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("type") == "ai":
            return str(message.get("content") or "")
    return ""


class MultiplyGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        assert ctx.sample is not None
        answer = last_ai_text(ctx.sample.messages).removeprefix("####").strip()
        ctx.set_reward(1.0 if answer and float(answer) == float(ctx.label or "nan") else 0.0)


PROMPT = [{"role": "user", "content": "What is 12 times 34?"}]


@pytest.mark.parametrize("workflow", [AsyncWorkflow, StreamingWorkflow, BlockingWorkflow])
async def test_reward_one_and_sample(
    multiply_policy: ScriptedPolicyServer, workflow: type[AgentWorkflow[Any]]
) -> None:
    result = await check_multiply_rollout(workflow, MultiplyGrader, multiply_policy)
    sample = result.sample
    assert sample is not None
    assert [m["type"] for m in sample.messages] == ["system", "human", "ai", "tool", "ai"]
    wire = sample.trajectory_messages
    assert wire is not None
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "assistant"]
    for message in (wire[2], wire[4]):
        assert message["model"]
        assert message["usage"]["total_tokens"] > 0
    requests = multiply_policy.requests_for(result.rollout_id)
    assert len(requests) == 2
    # Append-only: the second request starts with the first request's messages plus its answer.
    first, second = (r.body["messages"] for r in requests)
    assert second[: len(first)] == first
    # ...and the tool call's arguments go back exactly as the policy wrote them (compact JSON).
    assert second[2]["tool_calls"][0]["function"]["arguments"] == '{"a":12,"b":34}'
    assert second[: len(wire) - 1] == [
        {k: v for k, v in m.items() if k not in ("model", "usage")} for m in wire[:-1]
    ]


async def test_tool_error_is_recorded_as_a_tool_message_with_error_status() -> None:
    script = [
        tool_call_reply("divide", {"a": 1, "b": 0}),
        text_reply("#### 0"),
    ]
    async with ScriptedPolicyServer(script) as policy:
        result = await run_rollout(
            AsyncWorkflow, MultiplyGrader, prompt=PROMPT, label="0", policy=policy
        )
    assert result.status == "success", result.err_message
    assert result.sample is not None
    tool_message = result.sample.messages[3]
    assert tool_message["type"] == "tool"
    assert tool_message["status"] == "error"
    assert "division by zero" in tool_message["content"]
    assert result.sample.trajectory_messages is not None
    assert "division by zero" in result.sample.trajectory_messages[3]["content"]


async def test_policy_http_error_is_an_http_error() -> None:
    async with ScriptedPolicyServer([error_reply(503, "overloaded")]) as policy:
        result = await run_rollout(
            AsyncWorkflow, MultiplyGrader, prompt=PROMPT, label="408", policy=policy
        )
    assert (result.status, result.err_category) == ("failure", "http_error")


async def test_outside_a_rollout_the_model_refuses() -> None:
    with pytest.raises(NoActiveRolloutError):
        await model.ainvoke("hi")
    with pytest.raises(NoActiveRolloutError):
        await asyncio.to_thread(model.invoke, "hi")


class SubAgentWorkflow(AgentWorkflow):
    """A tool that runs a second graph on the same shared model: it reaches the same rollout,
    and the sample stays the main conversation."""

    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        inner = create_react_agent(model, [], prompt="You are a helper.")

        @tool
        async def ask_helper(question: str) -> str:
            """Ask the helper agent."""
            state = await inner.ainvoke({"messages": [("user", question)]})
            return str(state["messages"][-1].content)

        outer = create_react_agent(model, [ask_helper], prompt=SYSTEM)
        await outer.ainvoke({"messages": ctx.prompt})


async def test_sub_agent_reaches_the_same_rollout() -> None:
    script = [
        tool_call_reply("ask_helper", {"question": "12*34?"}),
        text_reply("408"),
        text_reply("#### 408"),
    ]
    async with ScriptedPolicyServer(script) as policy:
        result = await run_rollout(
            SubAgentWorkflow, MultiplyGrader, prompt=PROMPT, label="408", policy=policy
        )
        assert len(policy.requests_for(result.rollout_id)) == 3
    assert result.status == "success", result.err_message
    assert result.reward == 1.0
    assert result.sample is not None
    assert [m["type"] for m in result.sample.messages] == ["system", "human", "ai", "tool", "ai"]
    assert result.sample.messages[3]["content"] == "408"


async def test_concurrent_rollouts_share_one_graph(multiply_policy: ScriptedPolicyServer) -> None:
    pairs = [(7, 6), (12, 34), (3, 5), (9, 9)]
    results = await run_multiply_rollouts(AsyncWorkflow, MultiplyGrader, multiply_policy, pairs)
    for (a, b), result in zip(pairs, results, strict=True):
        assert result.reward == 1.0, result.err_message
        assert result.sample is not None
        assert last_ai_text(result.sample.messages) == f"#### {a * b}" or float(
            last_ai_text(result.sample.messages).removeprefix("####")
        ) == float(a * b)
        assert result.sample.trajectory_messages is not None
        tool_args = tool_call_arguments(result)
        assert {tool_args["a"], tool_args["b"]} == {a, b}


def test_source_ignores_other_conversations() -> None:
    from langchain_core.messages import HumanMessage

    source = GraphSampleSource()
    main = [HumanMessage("a")]
    source.record(main, AIMessage("x"))
    source.record([HumanMessage("other")], AIMessage("y"))
    assert [m.content for m in source.messages] == ["a", "x"]
