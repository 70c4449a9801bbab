"""Tool-call arguments go back to the policy exactly as it wrote them (training safety).

Strands parses a tool call's arguments into a dict and renders it again with ``json.dumps`` on
the next request; osmosis-strands restores the policy's raw string, so every policy call's
messages start with the previous call's messages and response, byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from strands_multiply_rollout import multiply

from osmosis_ai.eval import check_append_only
from osmosis_ai.rollout.context import RolloutContext
from osmosis_ai.rollout.integrations.agents.strands import (
    OsmosisRolloutModel,
    OsmosisStrandsAgent,
)
from osmosis_ai.testing import ScriptedPolicyServer
from osmosis_ai.testing.replies import Reply, ToolCall

# Not what json.dumps renders: no spaces, keys out of order, a non-ASCII escape.
RAW = '{"b":3,  "a":2,"note":"caf\\u00e9"}'


def _policy(body: Mapping[str, Any]) -> Reply:
    if body["messages"][-1]["role"] == "tool":
        return Reply(content="#### 6")
    return Reply(tool_calls=(ToolCall(name="multiply", arguments=RAW, id="call_raw"),))


def _tool_call_arguments(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    return [
        call["function"]["arguments"]
        for message in messages
        if message["role"] == "assistant"
        for call in message.get("tool_calls") or ()
    ]


def _context(policy: ScriptedPolicyServer, rollout_id: str) -> RolloutContext:
    return RolloutContext(
        chat_completions_url=policy.chat_completions_url(rollout_id),
        api_key="k",
        rollout_id=rollout_id,
    )


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
async def test_second_call_repeats_the_policys_raw_arguments(stream: bool) -> None:
    agent = OsmosisStrandsAgent(model=OsmosisRolloutModel(stream=stream), tools=[multiply])
    async with ScriptedPolicyServer(_policy) as policy:
        with _context(policy, "raw") as ctx:
            await agent.invoke_async("What is 2 times 3?")
        sample = await ctx.get_sample()
        requests = policy.requests

    assert [r.stream for r in requests] == [stream, stream]
    second = requests[1].messages
    assert _tool_call_arguments(second) == [RAW]
    # Strands itself holds the parsed value and would have sent json.dumps of it.
    assert agent.messages[1]["content"][0]["toolUse"]["input"] == json.loads(RAW)
    assert sample is not None
    assert sample.trajectory_messages is not None
    assert _tool_call_arguments(sample.trajectory_messages) == [RAW]
    # The check on what was sent: call 1 extends call 0 with the response the policy gave.
    response = second[len(requests[0].messages)]
    calls = [
        {"messages": requests[0].messages, "response": response},
        {"messages": second, "response": {"role": "assistant", "content": "#### 6"}},
    ]
    verdict = check_append_only(calls)
    assert verdict.append_only, verdict.to_json()
    assert verdict.threads == 1


async def test_a_deliberately_changed_tool_input_is_sent_as_changed() -> None:
    agent = OsmosisStrandsAgent(model=OsmosisRolloutModel(), tools=[multiply])
    async with ScriptedPolicyServer(_policy) as policy:
        with _context(policy, "edit"):
            await agent.invoke_async("What is 2 times 3?")
            agent.messages[1]["content"][0]["toolUse"]["input"] = {"a": 5, "b": 3}
            await agent.invoke_async("And again?")
        requests = policy.requests

    assert _tool_call_arguments(requests[1].messages) == [RAW]
    # The workflow's edit wins over the raw string: it is a different value.
    assert _tool_call_arguments(requests[2].messages) == ['{"a": 5, "b": 3}']


async def test_raw_arguments_stay_with_their_rollout() -> None:
    """Two rollouts, same tool-call id, different spelling: each gets its own back."""
    other = '{"a":2,"b":3,"note":"café"}'

    def policy_for(body: Mapping[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply(content="#### 6")
        raw = RAW if "first" in json.dumps(body["messages"]) else other
        return Reply(tool_calls=(ToolCall(name="multiply", arguments=raw, id="call_raw"),))

    model = OsmosisRolloutModel()
    async with ScriptedPolicyServer(policy_for) as policy:
        with _context(policy, "one"):
            await OsmosisStrandsAgent(model=model, tools=[multiply]).invoke_async("first")
        with _context(policy, "two"):
            await OsmosisStrandsAgent(model=model, tools=[multiply]).invoke_async("second")
        one, two = policy.requests_for("one"), policy.requests_for("two")

    assert _tool_call_arguments(one[1].messages) == [RAW]
    assert _tool_call_arguments(two[1].messages) == [other]


async def test_strands_drops_reasoning_and_the_check_says_so() -> None:
    """Not fixed (see the guide): Strands removes reasoningContent from the history it sends."""

    def reasoning_policy(body: Mapping[str, Any]) -> Reply:
        reply = _policy(body)
        return (
            Reply(tool_calls=reply.tool_calls, reasoning="Use the tool.")
            if reply.tool_calls
            else reply
        )

    agent = OsmosisStrandsAgent(model=OsmosisRolloutModel(), tools=[multiply])
    async with ScriptedPolicyServer(reasoning_policy) as policy:
        with _context(policy, "reasoning"):
            await agent.invoke_async("What is 2 times 3?")
        requests = policy.requests

    first, second = requests[0].messages, requests[1].messages
    sent_back = second[len(first)]
    assert "reasoning_content" not in sent_back
    response = {**sent_back, "reasoning_content": "Use the tool."}  # what the policy returned
    verdict = check_append_only(
        [{"messages": first, "response": response}, {"messages": second, "response": None}]
    )
    assert verdict.divergence is not None
    assert (verdict.divergence.call, verdict.divergence.message) == (1, len(first))
    assert (verdict.divergence.field, verdict.divergence.cause) == (
        "reasoning_content",
        "reasoning_dropped",
    )
    assert verdict.divergence.expected == "Use the tool."
