"""Train agents written with Pydantic AI (``pip install 'osmosis-ai[pydantic-ai]'``).

A rollout looks like ordinary Pydantic AI code::

    from pydantic_ai import Agent
    from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext
    from osmosis_ai.rollout.integrations.agents.pydantic_ai import OsmosisRolloutModel

    agent = Agent(OsmosisRolloutModel(), instructions="Use the tools, then answer as '#### <n>'.")

    @agent.tool_plain
    def multiply(a: float, b: float) -> float:
        return a * b

    class MultiplyWorkflow(AgentWorkflow):
        async def run(self, ctx: AgentWorkflowContext) -> None:
            await agent.run(ctx.prompt[-1]["content"])

* :class:`OsmosisRolloutModel` is a Pydantic AI ``Model`` that sends every request to the
  policy of the rollout being run (resolved on each call, over the ``openai`` client, with
  ``agent.run``, ``agent.run_stream`` and ``agent.iter`` alike). Agents built at import time,
  sub-agents called from tools and tool loops all reach the right rollout.
* The model also records the rollout's sample (:class:`PydanticAISampleSource`, registered on
  the first policy call when the rollout has no sample source yet): ``sample.messages`` is the
  top-level agent's history in Pydantic AI's own JSON form (``ModelMessagesTypeAdapter``),
  ``sample.trajectory_messages`` its chat-completions form with per-call ``usage`` and
  ``model`` on assistant messages.

Failures: the policy answering an HTTP error, or not at all, raises
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
    "PydanticAISampleSource": f"{_P}.sample",
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
    from .sample import PydanticAISampleSource as PydanticAISampleSource
