"""Train Google ADK agents with osmosis (``pip install 'osmosis-ai[adk]'``).

A rollout looks like ordinary ADK code::

    from google.adk.agents import LlmAgent
    from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext
    from osmosis_ai.rollout.integrations.agents.adk import (
        OsmosisRolloutModel, run_agent, tool_error_reply,
    )

    def multiply(a: float, b: float) -> float:
        "Multiply two numbers."
        return a * b

    agent = LlmAgent(
        name="multiplier", model=OsmosisRolloutModel(), tools=[multiply],
        instruction="Use the tool, then answer as '#### <n>'.",
        on_tool_error_callback=tool_error_reply,
    )

    class MultiplyWorkflow(AgentWorkflow):
        async def run(self, ctx: AgentWorkflowContext) -> None:
            await run_agent(agent, ctx.prompt)

* :class:`OsmosisRolloutModel` is an ADK ``BaseLlm`` that sends every request to the policy of
  the rollout being run (looked up on each call, through core's shared policy client), so an
  agent built at import time, its sub-agents and its tool loop all reach the right rollout;
  ADK's streaming (``RunConfig(streaming_mode=SSE)``) and non-streaming calls both work.
* :func:`run_agent` runs an agent in a fresh in-memory session; the session's events become the
  sample's ``messages`` (:class:`AdkSampleSource`) and the top-level agent's conversation, as it
  went on the wire, its ``trajectory_messages`` (``model`` and ``usage`` on assistant messages).
* :func:`tool_error_reply` (``on_tool_error_callback``) records a tool's exception as a fact of
  the rollout and shows the model the error.

Failures: an HTTP error or no answer from the policy raises
:class:`~osmosis_ai.errors.PolicyHTTPError` (a timeout :class:`~osmosis_ai.errors.PolicyTimeoutError`);
the model called outside a rollout raises :class:`~osmosis_ai.errors.NoActiveRolloutError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai.rollout.integrations.spi import lazy_exports

_P = __name__
_SPI = "osmosis_ai.rollout.integrations.spi"
_EXPORTS = {
    "OsmosisRolloutModel": f"{_P}.model",
    "AdkSampleSource": f"{_P}.sample",
    "run_agent": f"{_P}.runner",
    "tool_error_reply": f"{_P}.runner",
    "NoActiveRolloutError": _SPI,
    "PolicyHTTPError": _SPI,
    "PolicyTimeoutError": _SPI,
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names as _EXPORTS (checked by a core test)
    from osmosis_ai.rollout.integrations.spi import NoActiveRolloutError as NoActiveRolloutError
    from osmosis_ai.rollout.integrations.spi import PolicyHTTPError as PolicyHTTPError
    from osmosis_ai.rollout.integrations.spi import PolicyTimeoutError as PolicyTimeoutError

    from .model import OsmosisRolloutModel as OsmosisRolloutModel
    from .runner import run_agent as run_agent
    from .runner import tool_error_reply as tool_error_reply
    from .sample import AdkSampleSource as AdkSampleSource
