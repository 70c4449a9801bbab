"""Train LangGraph agents with osmosis (``pip install 'osmosis-ai[langgraph]'``).

A rollout looks like ordinary LangGraph code::

    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent
    from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext
    from osmosis_ai.rollout.integrations.agents.langgraph import OsmosisChatModel

    @tool
    def multiply(a: float, b: float) -> float:
        "Multiply two numbers."
        return a * b

    agent = create_react_agent(OsmosisChatModel(temperature=1.0), [multiply])

    class MultiplyWorkflow(AgentWorkflow):
        async def run(self, ctx: AgentWorkflowContext) -> None:
            await agent.ainvoke({"messages": [("user", ctx.prompt)]})

* :class:`OsmosisChatModel` is a ``langchain_openai.ChatOpenAI`` that sends every call to the
  policy of the rollout being run (found through the active ``RolloutContext`` on each call, via
  core's shared policy client), so a graph compiled at import time, a sub-graph and a tool loop
  all reach the right rollout. ``ainvoke``/``astream``/``astream_events`` and the blocking
  ``invoke``/``stream`` all work.
* :class:`GraphSampleSource` is registered by the model on its first call in a rollout: the
  sample's ``messages`` are the conversation's LangChain messages (``message.model_dump()``
  dicts) and ``trajectory_messages`` the same conversation as chat-completions messages, as
  ``ChatOpenAI`` put them on the wire, with ``model`` and ``usage`` on each assistant message.

Failures: an HTTP error or no answer from the policy raises
:class:`~osmosis_ai.errors.PolicyHTTPError` (``http_error``; a timeout is
:class:`~osmosis_ai.errors.PolicyTimeoutError`, ``timeout``); the model called outside a rollout
raises :class:`~osmosis_ai.errors.NoActiveRolloutError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai.rollout.integrations.spi import lazy_exports

_P = __name__
_SPI = "osmosis_ai.rollout.integrations.spi"
_EXPORTS = {
    "OsmosisChatModel": f"{_P}.model",
    "OsmosisRolloutModel": f"{_P}.model",
    "GraphSampleSource": f"{_P}.sample",
    "PolicyTimeoutError": _SPI,
    "NoActiveRolloutError": _SPI,
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names as _EXPORTS (checked by a core test)
    from osmosis_ai.rollout.integrations.spi import NoActiveRolloutError as NoActiveRolloutError
    from osmosis_ai.rollout.integrations.spi import PolicyTimeoutError as PolicyTimeoutError

    from .model import OsmosisChatModel as OsmosisChatModel
    from .model import OsmosisRolloutModel as OsmosisRolloutModel
    from .sample import GraphSampleSource as GraphSampleSource
