"""LocalBackend's per-rollout config copies share agents and the model instead of deep-copying."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent

from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowConfig, AgentWorkflowContext
from osmosis_ai.rollout.integrations.agents.pydantic_ai import OsmosisRolloutModel
from osmosis_ai.testing import ScriptedPolicyServer, run_rollout

model = OsmosisRolloutModel("openai/my-policy", settings={"temperature": 0.5})
agent = Agent(model)


class Config(AgentWorkflowConfig):
    agent: Any


class SameAgentWorkflow(AgentWorkflow[Config]):
    async def run(self, ctx: AgentWorkflowContext[Config]) -> None:
        assert ctx.config is not None
        assert ctx.config.agent is agent
        await ctx.config.agent.run("hi")


async def test_config_copies_share_the_agent_and_its_model() -> None:
    assert model.model_name == "my-policy"
    assert repr(model) == "OsmosisRolloutModel(model_name='my-policy')"
    assert model.settings == {"temperature": 0.5}
    async with ScriptedPolicyServer(["hello"]) as policy:
        result = await run_rollout(
            SameAgentWorkflow,
            prompt="hi",
            policy=policy,
            grade=False,
            workflow_config=Config(name="c", agent=agent),
        )
        sent = policy.requests_for(result.rollout_id)[0].body
    assert result.status == "success", result.err_message
    assert (sent["model"], sent["temperature"]) == ("my-policy", 0.5)
