"""Module-level configuration: the agent (built once, at import time) and the turn budget.

`OsmosisRolloutModel` stands for the model being trained or evaluated; every call it makes goes
to the rollout that is running when the call happens, so one agent serves all rollouts.
"""

from typing import Any

from agents import ModelSettings, function_tool

from osmosis_ai.rollout import AgentWorkflowConfig
from osmosis_ai.rollout.integrations.agents.openai_agents import (
    OsmosisAgent,
    OsmosisRolloutModel,
)


@function_tool
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


config = MultiplyConfig(
    name="multiply-local-openai",
    agent=OsmosisAgent(
        name="calculator",
        instructions="Use the multiply tool, then end with the answer as `#### <number>`.",
        model=OsmosisRolloutModel(),
        model_settings=ModelSettings(temperature=1.0, top_p=1.0, max_tokens=4096),
        tools=[multiply],
    ),
)
