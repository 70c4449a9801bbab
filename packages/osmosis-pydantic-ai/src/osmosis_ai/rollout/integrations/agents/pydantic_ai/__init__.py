"""Train agents written with Pydantic AI (``pip install 'osmosis-ai[pydantic-ai]'``).

Give the agent :class:`OsmosisRolloutModel` as its model, e.g.
``Agent(OsmosisRolloutModel(), instructions=...)``, at import time if you like: every request
goes to the policy of the rollout running it (the active ``RolloutContext``), with
``agent.run``, ``agent.run_stream`` and ``agent.iter`` alike, so sub-agents called from tools
and tool loops reach the right rollout. The model registers a :class:`PydanticAISampleSource`
on the rollout's first call: ``sample.messages`` is the top-level agent's history in Pydantic
AI's own JSON form (``ModelMessagesTypeAdapter``), ``sample.trajectory_messages`` its
chat-completions form with per-call ``usage`` and ``model`` on assistant messages. A failing
policy raises :class:`PolicyHTTPError` (a timeout :class:`PolicyTimeoutError`); a call outside
a rollout :class:`NoActiveRolloutError`. Guide: ``docs/guides/pydantic-ai.md``.
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
