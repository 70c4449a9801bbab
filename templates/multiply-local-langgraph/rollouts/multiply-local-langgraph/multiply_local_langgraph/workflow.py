"""The agent run: `graph.ainvoke`; the rollout's sample is the conversation the model saw."""

from multiply_local_langgraph.config import MultiplyConfig
from multiply_local_langgraph.config import config as default_config
from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext


class MultiplyWorkflow(AgentWorkflow[MultiplyConfig]):
    async def run(self, ctx: AgentWorkflowContext[MultiplyConfig]) -> None:
        config = ctx.config or self.config or default_config
        await config.agent.ainvoke(
            {"messages": ctx.prompt}, config={"recursion_limit": config.recursion_limit}
        )
        return None
