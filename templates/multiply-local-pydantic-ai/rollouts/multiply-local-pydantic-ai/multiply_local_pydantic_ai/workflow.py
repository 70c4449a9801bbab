"""The agent run: `agent.run` on the row's prompt; the model records the history as the sample."""

from pydantic_ai.usage import UsageLimits

from multiply_local_pydantic_ai.config import MultiplyConfig
from multiply_local_pydantic_ai.config import config as default_config
from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext


def split_prompt(prompt: list[dict]) -> tuple[str, str]:
    """(system text, user text) of the dataset row's chat messages."""
    system = "\n\n".join(str(m["content"]) for m in prompt if m.get("role") == "system")
    user = "\n\n".join(str(m["content"]) for m in prompt if m.get("role") == "user")
    return system, user


class MultiplyWorkflow(AgentWorkflow[MultiplyConfig]):
    async def run(self, ctx: AgentWorkflowContext[MultiplyConfig]) -> None:
        config = ctx.config or self.config or default_config
        system, user = split_prompt(ctx.prompt)
        await config.agent.run(
            user, deps=system, usage_limits=UsageLimits(request_limit=config.max_turns)
        )
        return None
