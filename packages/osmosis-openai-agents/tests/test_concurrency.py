"""200 concurrent rollouts in one event loop share one agent object and never see each other."""

from __future__ import annotations

import asyncio

from agents import Runner, function_tool

from osmosis_ai.rollout import RolloutContext, RolloutSample, get_rollout_context
from osmosis_ai.rollout.integrations.agents.openai_agents import OsmosisAgent, OsmosisMemorySession
from osmosis_ai.testing import ScriptedPolicyServer
from osmosis_ai.testing.responders import multiply_operands

ROLLOUTS = 200
seen_by_tool: dict[str, list[tuple[int, int]]] = {}


@function_tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers (a sync tool: the SDK runs it in a worker thread)."""
    ctx = get_rollout_context()
    assert ctx is not None
    seen_by_tool.setdefault(ctx.rollout_id, []).append((a, b))
    return a * b


SHARED_AGENT = OsmosisAgent(name="calc", instructions="Answer as '#### n'.", tools=[multiply])


async def one_rollout(
    policy: ScriptedPolicyServer, index: int
) -> tuple[str, object, RolloutSample | None]:
    rollout_id = f"c-{index}"
    prompt = f"What is {index} times {index + 7}?"
    with RolloutContext(
        chat_completions_url=policy.chat_completions_url(rollout_id),
        api_key=f"key-{index}",
        rollout_id=rollout_id,
    ) as ctx:
        session = OsmosisMemorySession()
        if index % 2:
            streamed = Runner.run_streamed(SHARED_AGENT, prompt, session=session, max_turns=4)
            async for _ in streamed.stream_events():
                pass
            final = streamed.final_output
        else:
            final = (
                await Runner.run(SHARED_AGENT, prompt, session=session, max_turns=4)
            ).final_output
        sample = await ctx.get_sample()
    return rollout_id, final, sample


async def test_200_concurrent_rollouts_without_cross_talk(
    multiply_policy: ScriptedPolicyServer,
) -> None:
    seen_by_tool.clear()
    results = await asyncio.gather(*(one_rollout(multiply_policy, i) for i in range(ROLLOUTS)))
    for index, (rollout_id, final, sample) in enumerate(results):
        expected = index * (index + 7)
        assert final == f"#### {expected}", rollout_id
        assert sample is not None
        assert sample.messages[1] == {
            "role": "user",
            "content": f"What is {index} times {index + 7}?",
        }
        assert sample.messages[-1]["content"][0]["text"] == f"#### {expected}"
        assert seen_by_tool[rollout_id] == [(index, index + 7)]
        requests = multiply_policy.requests_for(rollout_id)
        assert len(requests) == 2
        for request in requests:
            assert request.bearer_token == f"key-{index}"
            user = next(m for m in request.messages if m["role"] == "user")
            assert multiply_operands(user["content"]) == (index, index + 7)
    assert len(multiply_policy.requests) == 2 * ROLLOUTS
