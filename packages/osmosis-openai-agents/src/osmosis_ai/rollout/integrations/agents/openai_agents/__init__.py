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
:class:`~osmosis_ai.rollout.errors.PolicyHTTPError` (category ``http_error``; a client timeout
is :class:`PolicyTimeoutError`, category ``timeout``). Running out of ``max_turns`` raises the
SDK's ``MaxTurnsExceeded``, reported as ``agent_error``: the policy did not finish within the
turn budget the rollout author chose, which is the agent's behaviour, not an infrastructure
failure; the partial conversation stays in the session.

Tracing: importing this integration disables the SDK's tracing (which would upload traces to
OpenAI whenever ``OPENAI_API_KEY`` is set). Set ``OSMOSIS_OPENAI_AGENTS_TRACING=1`` to keep the
SDK's tracing configuration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai._lazy import lazy_exports

_P = __name__
_EXPORTS = {
    "OsmosisAgent": f"{_P}.agent",
    "OsmosisRolloutModel": f"{_P}.model",
    "OsmosisLitellmModel": f"{_P}.model",
    "OsmosisMemorySession": f"{_P}.session",
    "SessionSampleSource": f"{_P}.session",
    "PolicyTimeoutError": f"{_P}.policy_errors",
}
__all__ = [
    "OsmosisAgent",
    "OsmosisLitellmModel",
    "OsmosisMemorySession",
    "OsmosisRolloutModel",
    "PolicyTimeoutError",
    "SessionSampleSource",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .agent import OsmosisAgent
    from .model import (
        OsmosisLitellmModel,
        OsmosisRolloutModel,
    )
    from .policy_errors import (
        PolicyTimeoutError,
    )
    from .session import (
        OsmosisMemorySession,
        SessionSampleSource,
    )
