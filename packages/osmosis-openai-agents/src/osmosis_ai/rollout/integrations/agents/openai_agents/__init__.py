"""Train agents written with the OpenAI Agents SDK (``pip install 'osmosis-ai[openai-agents]'``).

A rollout looks like ordinary OpenAI Agents code::

    from agents import ModelSettings, Runner, function_tool
    from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext
    from osmosis_ai.rollout.integrations.agents.openai_agents import (
        OsmosisAgent, OsmosisMemorySession, OsmosisRolloutModel,
    )

    @function_tool
    def multiply(a: int, b: int) -> int:
        return a * b

    agent = OsmosisAgent(
        name="calculator",
        instructions="Use the tools, then answer as '#### <number>'.",
        model=OsmosisRolloutModel(),
        model_settings=ModelSettings(temperature=1.0, top_p=1.0, max_tokens=1024),
        tools=[multiply],
    )

    class MultiplyWorkflow(AgentWorkflow):
        async def run(self, ctx: AgentWorkflowContext) -> None:
            await Runner.run(agent, ctx.prompt, session=OsmosisMemorySession(), max_turns=8)

* :class:`OsmosisRolloutModel` sends every model call to the policy of the rollout being run
  (found through the active ``RolloutContext`` on each call, over the ``openai`` client, with
  ``Runner.run`` and ``Runner.run_streamed`` alike). Agents can be built at import time,
  cloned, or reached through handoffs.
* :class:`OsmosisAgent` is ``agents.Agent``; it only makes sure the model is the policy.
* :class:`OsmosisMemorySession` records the conversation and provides the rollout's sample:
  ``sample.messages`` is the SDK's Responses-API item list (with the agents' system
  instructions as ``{"role": "system"}`` items), ``sample.trajectory_messages`` its
  chat-completions form with per-call ``usage`` and ``model`` on assistant messages.

Failures: the policy answering an HTTP error, or not at all, raises
:class:`~osmosis_ai.errors.PolicyHTTPError` (category ``http_error``; a client timeout is
:class:`~osmosis_ai.errors.PolicyTimeoutError`, category ``timeout``); the model called outside a
rollout raises :class:`~osmosis_ai.errors.NoActiveRolloutError`. The policy client, header
hygiene and error translation are core's (:mod:`osmosis_ai.rollout.policy`). Running out of ``max_turns`` raises the
SDK's ``MaxTurnsExceeded``, reported as ``agent_error``: the policy did not finish within the
turn budget the rollout author chose, which is the agent's behaviour, not an infrastructure
failure; the partial conversation stays in the session.

Tracing: importing this integration disables the SDK's tracing (which would upload traces to
OpenAI whenever ``OPENAI_API_KEY`` is set). Set ``OSMOSIS_OPENAI_AGENTS_TRACING=1`` to keep the
SDK's tracing configuration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai.rollout.integrations.spi import lazy_exports

_P = __name__
_SPI = "osmosis_ai.rollout.integrations.spi"
_EXPORTS = {
    "OsmosisAgent": f"{_P}.agent",
    "OsmosisRolloutModel": f"{_P}.model",
    "OsmosisLitellmModel": f"{_P}.model",
    "OsmosisMemorySession": f"{_P}.session",
    "SessionSampleSource": f"{_P}.session",
    "SessionNotRegisteredError": f"{_P}.session",
    "PolicyTimeoutError": _SPI,
    "NoActiveRolloutError": _SPI,
}
# 0.3's five public names plus this implementation's.
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names as _EXPORTS (checked by a core test)
    from osmosis_ai.rollout.integrations.spi import NoActiveRolloutError as NoActiveRolloutError
    from osmosis_ai.rollout.integrations.spi import PolicyTimeoutError as PolicyTimeoutError

    from .agent import OsmosisAgent as OsmosisAgent
    from .model import OsmosisLitellmModel as OsmosisLitellmModel
    from .model import OsmosisRolloutModel as OsmosisRolloutModel
    from .session import OsmosisMemorySession as OsmosisMemorySession
    from .session import SessionNotRegisteredError as SessionNotRegisteredError
    from .session import SessionSampleSource as SessionSampleSource
