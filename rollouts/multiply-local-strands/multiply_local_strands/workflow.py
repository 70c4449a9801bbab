"""The agent: ask the policy, let it call `multiply`, stop once it gives `#### <answer>`."""

from multiply_local_strands.config import MultiplyConfig
from multiply_local_strands.config import config as default_config
from multiply_local_strands.grader import final_answer, last_text
from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext
from osmosis_ai.rollout.integrations.agents.strands import OsmosisStrandsAgent

NUDGE = "Give the final answer on its own line as `#### <number>`."


class MultiplyWorkflow(AgentWorkflow[MultiplyConfig]):
    async def run(self, ctx: AgentWorkflowContext[MultiplyConfig]) -> None:
        config = ctx.config or self.config or default_config
        agent = OsmosisStrandsAgent(
            name=config.name,
            model=config.model,
            tools=config.tools,
            messages=ctx.prompt,
            callback_handler=None,
        )
        # Each invoke_async() runs the model/tool loop until the model stops; if it stopped
        # without an answer, nudge it, up to the turn budget. The conversation is the sample.
        await agent.invoke_async()
        for _ in range(config.max_turns - 1):
            if final_answer(last_text(agent.messages)) is not None:
                break
            await agent.invoke_async(NUDGE)
        return None
