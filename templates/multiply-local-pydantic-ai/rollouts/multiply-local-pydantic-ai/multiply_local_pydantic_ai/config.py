"""Module-level configuration: the agent (built once, at import time) and the turn budget.

`OsmosisRolloutModel` stands for the model being trained or evaluated; every request it makes
goes to the rollout that is running when the request happens, so one agent serves all rollouts.
"""

from typing import Any

from pydantic_ai import Agent, RunContext

from osmosis_ai.rollout import AgentWorkflowConfig
from osmosis_ai.rollout.integrations.agents.pydantic_ai import OsmosisRolloutModel

# The dataset row's system prompt arrives as the run's `deps` (see workflow.py).
agent = Agent(
    OsmosisRolloutModel(settings={"temperature": 1.0, "top_p": 1.0, "max_tokens": 4096}),
    deps_type=str,
)


@agent.system_prompt
def row_system_prompt(ctx: RunContext[str]) -> str:
    return ctx.deps


@agent.tool_plain
def multiply(a: float, b: float) -> float:
    """Multiply two numbers and return the product.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


class MultiplyConfig(AgentWorkflowConfig):
    agent: Any
    max_turns: int = 8


config = MultiplyConfig(name="multiply-local-pydantic-ai", agent=agent)
