"""Module-level configuration: the agent (built once, at import time) and the turn budget.

`OsmosisRolloutModel` stands for the model being trained or evaluated; every request it makes
goes to the rollout that is running when the request happens, so one agent serves all rollouts.
"""

from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.readonly_context import ReadonlyContext
from google.genai import types

from osmosis_ai.rollout import AgentWorkflowConfig
from osmosis_ai.rollout.integrations.agents.adk import OsmosisRolloutModel, tool_error_reply


def multiply(a: float, b: float) -> float:
    """Multiply two numbers and return the product.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


def row_system_prompt(ctx: ReadonlyContext) -> str:
    """The dataset row's system prompt, put in the session state by the workflow."""
    return str(ctx.state.get("system_prompt", ""))


agent = LlmAgent(
    name="multiplier",
    model=OsmosisRolloutModel(),
    instruction=row_system_prompt,
    tools=[multiply],
    generate_content_config=types.GenerateContentConfig(
        temperature=1.0, top_p=1.0, max_output_tokens=4096
    ),
    # A tool that raises: recorded as a fact of the rollout, and the model reads the error.
    on_tool_error_callback=tool_error_reply,
)


class MultiplyConfig(AgentWorkflowConfig):
    agent: Any
    max_turns: int = 8


config = MultiplyConfig(name="multiply-local-adk", agent=agent)
