"""Module-level configuration: the graph (compiled once, at import time) and the step budget.

`OsmosisChatModel` is a `ChatOpenAI` that stands for the model being trained or evaluated; every
call it makes goes to the rollout that is running when the call happens, so one graph serves
all rollouts.
"""

from typing import Any

from langchain_core.tools import tool
from langgraph.prebuilt import ToolNode, create_react_agent

from osmosis_ai.rollout import AgentWorkflowConfig
from osmosis_ai.rollout.integrations.agents.langgraph import OsmosisChatModel


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers and return the product.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


class MultiplyConfig(AgentWorkflowConfig):
    agent: Any
    # LangGraph counts steps (model calls and tool runs): 8 turns of call + tool.
    recursion_limit: int = 17


config = MultiplyConfig(
    name="multiply-local-langgraph",
    agent=create_react_agent(
        OsmosisChatModel(temperature=1.0, top_p=1.0, max_tokens=4096),
        # handle_tool_errors=True: a failing tool becomes an error ToolMessage the policy sees.
        ToolNode([multiply], handle_tool_errors=True),
        prompt="Use the multiply tool, then end with the answer as `#### <number>`.",
    ),
)
