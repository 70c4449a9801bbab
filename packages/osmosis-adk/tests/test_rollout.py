"""End to end through LocalBackend (``osmosis_ai.testing.run_rollout``) with real Google ADK
agents against the scripted policy on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.tools.agent_tool import AgentTool
from google.genai import types

from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext, Grader, GraderContext
from osmosis_ai.rollout.integrations.agents.adk import (
    NoActiveRolloutError,
    OsmosisRolloutModel,
    run_agent,
    tool_error_reply,
)
from osmosis_ai.testing import (
    ScriptedPolicyServer,
    delayed,
    error_reply,
    run_rollout,
    text_reply,
    tool_call_reply,
)

SYSTEM = "You multiply numbers. Use the multiply tool, then answer as '#### <number>'."


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def explode(a: int) -> int:
    """A tool that always fails."""
    raise RuntimeError(f"tool blew up: on purpose ({a})")


# Built at import time, long before any rollout: the model binds on every call.
agent = LlmAgent(
    name="multiplier",
    model=OsmosisRolloutModel(),
    instruction=SYSTEM,
    tools=[multiply, explode],
    generate_content_config=types.GenerateContentConfig(temperature=1.0, max_output_tokens=512),
    on_tool_error_callback=tool_error_reply,
)


class MultiplyWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        await run_agent(agent, ctx.prompt)


class StreamingWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        await run_agent(agent, ctx.prompt, streaming=True)


def final_text(events: Sequence[Mapping[str, Any]]) -> str:
    for event in reversed(events):
        parts = (event.get("content") or {}).get("parts") or []
        texts = [p["text"] for p in parts if p.get("text") and not p.get("thought")]
        if event.get("author") != "user" and texts:
            return "".join(texts)
    return ""


class MultiplyGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        assert ctx.sample is not None
        answer = final_text(ctx.sample.messages).removeprefix("####").strip()
        ctx.set_reward(1.0 if answer == ctx.label else 0.0)


PROMPT = [{"role": "user", "content": "What is 12 times 34?"}]


@pytest.mark.parametrize("workflow", [MultiplyWorkflow, StreamingWorkflow])
async def test_reward_one_sample_and_append_only(
    multiply_policy: ScriptedPolicyServer, workflow: type[AgentWorkflow[Any]]
) -> None:
    result = await run_rollout(
        workflow, MultiplyGrader, prompt=PROMPT, label="408", policy=multiply_policy
    )
    assert result.status == "success", result.err_message
    assert result.reward == 1.0
    sample = result.sample
    assert sample is not None
    # ADK's own events: the user's message, the call, the function response, the answer.
    assert [e["author"] for e in sample.messages] == ["user", *["multiplier"] * 3]
    assert sample.messages[1]["content"]["parts"][0]["function_call"]["name"] == "multiply"
    wire = sample.trajectory_messages
    assert wire is not None
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "assistant"]
    assert wire[0]["content"].startswith(SYSTEM)
    assert wire[3]["content"] == "408"
    for message in (wire[2], wire[4]):
        assert message["model"]
        assert message["usage"]["total_tokens"] > 0
    requests = multiply_policy.requests_for(result.rollout_id)
    first, second = (r.body["messages"] for r in requests)
    assert second[: len(first)] == first
    # The tool call's arguments go back exactly as the policy wrote them (ADK parses them to a
    # dict; json.dumps would re-render them as '{"a": 12, "b": 34}').
    assert second[2]["tool_calls"][0]["function"]["arguments"] == '{"a":12,"b":34}'
    assert second == [{k: v for k, v in m.items() if k not in ("model", "usage")} for m in wire[:4]]
    body = requests[0].body
    assert body["temperature"] == 1.0
    assert body["max_tokens"] == 512
    assert {t["function"]["name"] for t in body["tools"]} == {"multiply", "explode"}
    assert body["tools"][0]["function"]["parameters"]["type"] == "object"
    assert body.get("stream", False) is (workflow is StreamingWorkflow)


async def test_a_tool_error_is_recorded_and_shown_to_the_model() -> None:
    script = [tool_call_reply("explode", {"a": 2}), text_reply("#### 0")]
    async with ScriptedPolicyServer(script) as policy:
        result = await run_rollout(
            MultiplyWorkflow, MultiplyGrader, prompt=PROMPT, label="0", policy=policy
        )
        second = policy.requests_for(result.rollout_id)[1].body["messages"]
    assert result.status == "success", result.err_message
    assert second[-1]["role"] == "tool"
    assert "tool blew up: on purpose (2)" in second[-1]["content"]
    assert result.sample is not None
    (error,) = result.sample.extra_fields["tool_errors"]
    assert error["tool"] == "explode"
    assert error["message"] == "RuntimeError: tool blew up: on purpose (2)"
    assert error["call_id"] == second[-1]["tool_call_id"]


unguarded = LlmAgent(name="unguarded", model=OsmosisRolloutModel(), tools=[explode])


class UnguardedWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        await run_agent(unguarded, ctx.prompt)


async def test_without_the_callback_a_raising_tool_fails_the_rollout_as_an_agent_error() -> None:
    async with ScriptedPolicyServer([tool_call_reply("explode", {"a": 3})]) as policy:
        result = await run_rollout(
            UnguardedWorkflow, MultiplyGrader, prompt=PROMPT, label="0", policy=policy
        )
    assert (result.status, result.err_category) == ("failure", "agent_error")
    assert "tool blew up" in (result.err_message or "")


@pytest.mark.parametrize("workflow", [MultiplyWorkflow, StreamingWorkflow])
async def test_policy_http_500_is_an_http_error(workflow: type[AgentWorkflow[Any]]) -> None:
    async with ScriptedPolicyServer([error_reply(500, "the GPU fell over")]) as policy:
        result = await run_rollout(
            workflow, MultiplyGrader, prompt=PROMPT, label="408", policy=policy
        )
    assert (result.status, result.err_category) == ("failure", "http_error")
    assert "HTTP 500" in (result.err_message or "")
    assert "the GPU fell over" in (result.err_message or "")
    assert f"/rollouts/{result.rollout_id}/chat/completions" in (result.err_message or "")


impatient = LlmAgent(name="impatient", model=OsmosisRolloutModel(timeout=0.1))


class ImpatientWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        await run_agent(impatient, "What is 12 times 34?")


async def test_policy_timeout_is_a_timeout_failure() -> None:
    async with ScriptedPolicyServer([delayed(0.5, "#### 408")]) as policy:
        result = await run_rollout(
            ImpatientWorkflow, MultiplyGrader, prompt=PROMPT, label="408", policy=policy
        )
    assert (result.status, result.err_category) == ("failure", "timeout")


async def test_outside_a_rollout_the_model_says_how_to_run_it() -> None:
    with pytest.raises(NoActiveRolloutError, match="OsmosisRolloutModel"):
        await run_agent(agent, "What is 2 times 3?")


helper = LlmAgent(name="helper", model=OsmosisRolloutModel(), instruction="You are the helper.")
boss = LlmAgent(
    name="boss",
    model=OsmosisRolloutModel(),
    instruction="Ask the helper.",
    tools=[AgentTool(helper)],
)


class BossWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        await run_agent(boss, ctx.prompt)


async def test_a_sub_agent_reaches_the_rollout_and_stays_out_of_the_trajectory() -> None:
    script = [
        tool_call_reply("helper", {"request": "12*34?"}),
        text_reply("408"),
        text_reply("#### 408"),
    ]
    async with ScriptedPolicyServer(script) as policy:
        result = await run_rollout(
            BossWorkflow, MultiplyGrader, prompt=PROMPT, label="408", policy=policy
        )
        requests = policy.requests_for(result.rollout_id)
    assert result.status == "success", result.err_message
    assert result.reward == 1.0
    assert len(requests) == 3
    assert requests[1].body["messages"][0]["content"].startswith("You are the helper.")
    assert result.sample is not None
    wire = result.sample.trajectory_messages
    assert wire is not None
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "assistant"]
    assert wire[3]["content"] == "408"


async def test_concurrent_rollouts_share_one_agent(multiply_policy: ScriptedPolicyServer) -> None:
    pairs = [(7, 6), (12, 34), (3, 5), (9, 9)]
    results = await asyncio.gather(
        *(
            run_rollout(
                MultiplyWorkflow,
                MultiplyGrader,
                prompt=[{"role": "user", "content": f"What is {a} times {b}?"}],
                label=str(a * b),
                policy=multiply_policy,
            )
            for a, b in pairs
        )
    )
    for (a, b), result in zip(pairs, results, strict=True):
        assert result.reward == 1.0, result.err_message
        assert result.sample is not None
        assert result.sample.trajectory_messages is not None
        call = result.sample.trajectory_messages[2]["tool_calls"][0]
        assert json.loads(call["function"]["arguments"]) == {"a": a, "b": b}
