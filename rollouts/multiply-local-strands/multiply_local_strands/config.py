"""Module-level configuration: the policy model, the tools and the turn budget.

`OsmosisRolloutModel` stands for the model being trained or evaluated. It can be built here, at
import time: every call it makes goes to the rollout that is running when the call happens.
"""

from typing import Any

from strands import tool

from osmosis_ai.rollout import AgentWorkflowConfig
from osmosis_ai.rollout.integrations.agents.strands import OsmosisRolloutModel


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers and return the product.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


class MultiplyConfig(AgentWorkflowConfig):
    model: Any
    tools: list[Any]
    max_turns: int = 8


config = MultiplyConfig(
    name="multiply-local-strands",
    model=OsmosisRolloutModel(params={"temperature": 1.0, "top_p": 1.0, "max_tokens": 4096}),
    tools=[multiply],
)
