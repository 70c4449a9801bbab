"""The agent run: `Runner.run` with an `OsmosisMemorySession`, whose history is the sample."""

from agents import Runner

from multiply_local_openai.config import MultiplyConfig
from multiply_local_openai.config import config as default_config
from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext
from osmosis_ai.rollout.integrations.agents.openai_agents import OsmosisMemorySession


class MultiplyWorkflow(AgentWorkflow[MultiplyConfig]):
    async def run(self, ctx: AgentWorkflowContext[MultiplyConfig]) -> None:
        config = ctx.config or self.config or default_config
        await Runner.run(
            config.agent,
            ctx.prompt,
            session=OsmosisMemorySession(),
            max_turns=config.max_turns,
        )
        return None
