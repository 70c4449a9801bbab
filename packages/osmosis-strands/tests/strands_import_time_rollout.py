"""A rollout whose agent (not just its config) is built at import time, outside any rollout."""

from __future__ import annotations

from strands import tool

from osmosis_ai.rollout.agent_workflow import AgentWorkflow
from osmosis_ai.rollout.context import AgentWorkflowContext
from osmosis_ai.rollout.integrations.agents.strands import OsmosisRolloutModel, OsmosisStrandsAgent


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


MODEL = OsmosisRolloutModel(params={"temperature": 0.0})
AGENT = OsmosisStrandsAgent(name="module-level", model=MODEL, tools=[multiply])


class ImportTimeAgentWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext) -> None:
        await AGENT.invoke_async(ctx.prompt[-1]["content"])
