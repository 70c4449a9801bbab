"""The agent run: `run_agent` on the row's prompt; the session's events become the sample."""

from google.adk.agents.run_config import RunConfig

from multiply_local_adk.config import MultiplyConfig
from multiply_local_adk.config import config as default_config
from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext
from osmosis_ai.rollout.integrations.agents.adk import run_agent


def split_prompt(prompt: list[dict]) -> tuple[str, str]:
    """(system text, user text) of the dataset row's chat messages."""
    system = "\n\n".join(str(m["content"]) for m in prompt if m.get("role") == "system")
    user = "\n\n".join(str(m["content"]) for m in prompt if m.get("role") == "user")
    return system, user


class MultiplyWorkflow(AgentWorkflow[MultiplyConfig]):
    async def run(self, ctx: AgentWorkflowContext[MultiplyConfig]) -> None:
        config = ctx.config or self.config or default_config
        system, user = split_prompt(ctx.prompt)
        await run_agent(
            config.agent,
            user,
            state={"system_prompt": system},
            run_config=RunConfig(max_llm_calls=config.max_turns),
        )
        return None
