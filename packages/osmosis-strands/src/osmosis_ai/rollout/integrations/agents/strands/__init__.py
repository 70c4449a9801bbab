"""The Strands Agents integration (distribution ``osmosis-strands``).

* :class:`OsmosisRolloutModel` — a Strands ``Model`` standing for the policy being trained. Build
  it anywhere (templates build it at import time); each call goes to the rollout running in the
  calling task, through the ``openai`` client (no LiteLLM).
* :class:`OsmosisStrandsAgent` — a drop-in ``strands.Agent`` whose conversation becomes the
  rollout's sample (``sample.messages``: Strands-native history; ``sample.trajectory_messages``:
  chat-completions form with per-call ``model`` and ``usage``).

Names resolve lazily: importing this package is instant, and Strands (about 1.5 s) is imported
when a name is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai._lazy import lazy_exports

_EXPORTS = {
    "OsmosisRolloutModel": f"{__name__}.model",
    "OsmosisStrandsAgent": f"{__name__}.agent",
    "StrandsSampleSource": f"{__name__}.sample",
    "StrandsAgentSampleSource": f"{__name__}.sample",
    "PolicyTimeoutError": f"{__name__}.errors",
    "NoActiveRolloutError": f"{__name__}.model",
    "aclose_clients": f"{__name__}.clients",
}
# The public SDK's two names first; the rest are extras of this implementation.
__all__ = [
    "NoActiveRolloutError",
    "OsmosisRolloutModel",
    "OsmosisStrandsAgent",
    "PolicyTimeoutError",
    "StrandsAgentSampleSource",
    "StrandsSampleSource",
    "aclose_clients",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .agent import OsmosisStrandsAgent
    from .clients import aclose_clients
    from .errors import PolicyTimeoutError
    from .model import NoActiveRolloutError, OsmosisRolloutModel
    from .sample import StrandsAgentSampleSource, StrandsSampleSource
