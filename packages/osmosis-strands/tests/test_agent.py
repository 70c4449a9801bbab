"""OsmosisStrandsAgent: construction forms, late binding, sample capture and clear errors."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from strands import Agent
from strands_import_time_rollout import AGENT, ImportTimeAgentWorkflow
from strands_multiply_rollout import MultiplyGrader, multiply

from osmosis_ai.rollout.context import RolloutContext
from osmosis_ai.rollout.integrations.agents.strands import (
    NoActiveRolloutError,
    OsmosisRolloutModel,
    OsmosisStrandsAgent,
    StrandsSampleSource,
)
from osmosis_ai.rollout.types import RolloutStatus
from osmosis_ai.testing import ScriptedPolicyServer, run_rollout


def _context(policy: ScriptedPolicyServer, rollout_id: str) -> RolloutContext:
    return RolloutContext(
        chat_completions_url=policy.chat_completions_url(rollout_id),
        api_key=f"key-{rollout_id}",
        rollout_id=rollout_id,
    )


def _text(message: Mapping[str, Any]) -> str:
    return "".join(block.get("text", "") for block in message["content"])


async def test_agent_built_at_import_time_binds_to_each_rollout_it_serves() -> None:
    AGENT.messages.clear()
    async with ScriptedPolicyServer("multiply") as policy:
        first = await run_rollout(
            ImportTimeAgentWorkflow,
            MultiplyGrader,
            prompt="What is 2 times 3?",
            label="6",
            policy=policy,
            rollout_id="import-1",
        )
        second = await run_rollout(
            ImportTimeAgentWorkflow,
            MultiplyGrader,
            prompt="What is 3 times 4?",
            label="12",
            policy=policy,
            rollout_id="import-2",
        )
        scopes = [request.rollout_id for request in policy.requests]

    assert first.status == second.status == RolloutStatus.SUCCESS
    assert first.reward == second.reward == 1.0
    assert scopes == ["import-1", "import-1", "import-2", "import-2"]
    assert first.sample is not None
    assert second.sample is not None
    assert len(first.sample.messages) == 4
    # A module-level agent keeps its history (that is Strands' behaviour), but each rollout's
    # trajectory attributes usage only to the policy calls made in that rollout.
    assert _text(second.sample.messages[-1]) == "#### 12"
    trajectory = second.sample.trajectory_messages
    assert trajectory is not None
    assert sum("usage" in m for m in trajectory if m["role"] == "assistant") == 2


async def test_sample_of_an_earlier_rollout_is_frozen_when_the_agent_moves_on() -> None:
    agent = OsmosisStrandsAgent(model=OsmosisRolloutModel(), tools=[multiply])
    async with ScriptedPolicyServer("multiply") as policy:
        with _context(policy, "a") as ctx_a:
            await agent.invoke_async("What is 5 times 5?")
        with _context(policy, "b") as ctx_b:
            await agent.invoke_async("What is 6 times 6?")
        sample_a = await ctx_a.get_sample()
        sample_b = await ctx_b.get_sample()
    assert sample_a is not None
    assert sample_b is not None
    assert len(sample_a.messages) == 4
    assert _text(sample_a.messages[-1]) == "#### 25"
    assert len(sample_b.messages) == 8
    assert _text(sample_b.messages[-1]) == "#### 36"


async def test_repeated_invocations_record_every_policy_call() -> None:
    async with ScriptedPolicyServer("multiply") as policy:
        with _context(policy, "loop") as ctx:
            agent = OsmosisStrandsAgent(model=OsmosisRolloutModel(), tools=[multiply])
            await agent.invoke_async("What is 2 times 3?")
            await agent.invoke_async("What is 4 times 5?")
            sample = await ctx.get_sample()
    assert sample is not None
    assert _text(sample.messages[-1]) == "#### 20"
    source = ctx.sample_source
    assert source is not None
    assert isinstance(source, StrandsSampleSource)
    preview = await source.get_preview(2)
    assert preview is not None
    assert list(preview.messages) == list(sample.messages[-2:])
    trajectory = sample.trajectory_messages
    assert trajectory is not None
    answers = [m for m in trajectory if m["role"] == "assistant"]
    assert len(answers) == 4
    assert all(m["model"] == "scripted-policy" and m["usage"]["total_tokens"] > 0 for m in answers)


async def test_agent_registers_exactly_one_sample_source() -> None:
    async with ScriptedPolicyServer("echo") as policy:
        with _context(policy, "one") as ctx:
            agent = OsmosisStrandsAgent(model=OsmosisRolloutModel(), messages=[])
            assert isinstance(ctx.sample_source, StrandsSampleSource)
            assert agent.sample_source is ctx.sample_source
            with pytest.raises(ValueError, match="one OsmosisStrandsAgent per rollout"):
                OsmosisStrandsAgent(model=OsmosisRolloutModel())
            # A plain strands.Agent (e.g. a sub-agent) can share the model without a sample.
            helper = Agent(model=OsmosisRolloutModel(), callback_handler=None)
            result = await helper.invoke_async("hello helper")
            assert "hello helper" in str(result)
            assert ctx.sample_source is agent.sample_source


async def test_plain_model_keeps_the_agent_a_plain_strands_agent() -> None:
    async with ScriptedPolicyServer("echo") as policy:
        with _context(policy, "plain") as ctx:
            from strands.models.openai import OpenAIModel

            OsmosisStrandsAgent(model=OpenAIModel(client_args={"api_key": "x"}, model_id="m"))
            assert ctx.sample_source is None


async def test_model_outside_a_rollout_says_how_to_run_it() -> None:
    agent = OsmosisStrandsAgent(model=OsmosisRolloutModel())
    with pytest.raises(RuntimeError, match="outside a rollout") as caught:
        await agent.invoke_async("hi")
    assert isinstance(caught.value, NoActiveRolloutError)
    assert "run_rollout" in str(caught.value)
    assert "LocalBackend" in str(caught.value)


async def test_rollout_without_a_policy_url_is_refused_clearly() -> None:
    agent = OsmosisStrandsAgent(model=OsmosisRolloutModel())
    with (
        RolloutContext(rollout_id="no-url"),
        pytest.raises(RuntimeError, match="no chat_completions_url"),
    ):
        await agent.invoke_async("hi")


async def test_positional_model_and_messages_and_quiet_default_handler(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with ScriptedPolicyServer("echo") as policy:
        with _context(policy, "pos") as ctx:
            agent = OsmosisStrandsAgent(
                OsmosisRolloutModel(), [{"role": "user", "content": "ping"}]
            )
            await agent.invoke_async()
            sample = await ctx.get_sample()
    assert sample is not None
    assert _text(sample.messages[-1]) == "ping"
    assert capsys.readouterr().out == ""  # Strands' default handler would print the stream


def test_sync_call_runs_on_its_own_event_loop() -> None:
    """``agent("...")`` runs a fresh loop in a worker thread; the client must follow the loop."""
    with ScriptedPolicyServer("multiply") as policy, _context(policy, "sync") as ctx:
        model = OsmosisRolloutModel(model_id="openai/osmosis-rollout", stream=False)
        agent = OsmosisStrandsAgent(model=model, tools=[multiply])
        agent("What is 7 times 8?")
        agent("What is 9 times 9?")
        sample = asyncio.run(ctx.get_sample())
        requests = policy.requests
    assert sample is not None
    assert _text(sample.messages[-1]) == "#### 81"
    assert {request.rollout_id for request in requests} == {"sync"}
    assert len(requests) == 4
    assert not any(request.stream for request in requests)
    assert {request.body["model"] for request in requests} == {"osmosis-rollout"}


def test_update_config_is_shared_with_the_agents_bound_copy() -> None:
    model = OsmosisRolloutModel(params={"temperature": 1.0})
    agent = OsmosisStrandsAgent(model=model)
    model.update_config(params={"temperature": 0.5})
    assert agent.model.get_config()["params"] == {"temperature": 0.5}
    assert model.get_config()["model_id"] == "osmosis-rollout"


def test_params_must_be_a_dict() -> None:
    with pytest.raises(TypeError, match="params"):
        OsmosisRolloutModel(params=[("temperature", 1.0)])
