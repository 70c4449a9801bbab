"""The Strands Agents integration (distribution ``osmosis-strands``).

* :class:`OsmosisRolloutModel` — a Strands ``Model`` standing for the policy being trained. Build
  it anywhere (templates build it at import time); each call goes to the rollout running in the
  calling task, through the ``openai`` client (no LiteLLM).
* :class:`OsmosisStrandsAgent` — a drop-in ``strands.Agent`` whose conversation becomes the
  rollout's sample (``sample.messages``: Strands-native history; ``sample.trajectory_messages``:
  chat-completions form with per-call ``model`` and ``usage``).

The policy client, error translation and usage records are core's
(:mod:`osmosis_ai.rollout.policy`); ``PolicyTimeoutError`` and ``NoActiveRolloutError`` are the
classes of :mod:`osmosis_ai.errors`, re-exported here.

Names resolve lazily: importing this package is instant, and Strands (about 1.5 s) is imported
when a name is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai.rollout.integrations.spi import exports_from, lazy_exports

_SPI = "osmosis_ai.rollout.integrations.spi"
_EXPORTS = exports_from(
    {
        f"{__name__}.model": "OsmosisRolloutModel aclose_clients",
        f"{__name__}.agent": "OsmosisStrandsAgent",
        f"{__name__}.sample": "StrandsSampleSource StrandsAgentSampleSource",
        _SPI: "PolicyTimeoutError NoActiveRolloutError",
    }
)
# 0.3's two public names (OsmosisRolloutModel, OsmosisStrandsAgent) plus this implementation's.
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names as _EXPORTS (checked by a core test)
    from osmosis_ai.rollout.integrations.spi import (
        NoActiveRolloutError as NoActiveRolloutError,
    )
    from osmosis_ai.rollout.integrations.spi import (
        PolicyTimeoutError as PolicyTimeoutError,
    )

    from .agent import OsmosisStrandsAgent as OsmosisStrandsAgent
    from .model import (
        OsmosisRolloutModel as OsmosisRolloutModel,
    )
    from .model import (
        aclose_clients as aclose_clients,
    )
    from .sample import (
        StrandsAgentSampleSource as StrandsAgentSampleSource,
    )
    from .sample import (
        StrandsSampleSource as StrandsSampleSource,
    )
