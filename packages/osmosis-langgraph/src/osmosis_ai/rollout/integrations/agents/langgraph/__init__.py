"""Train LangGraph agents with osmosis (``pip install 'osmosis-ai[langgraph]'``).

Build the graph with :class:`OsmosisChatModel` (a ``langchain_openai.ChatOpenAI``) wherever a
chat model goes, e.g. ``create_react_agent(OsmosisChatModel(temperature=1.0), [multiply])``,
at import time if you like: every call goes to the policy of the rollout running it (the
active ``RolloutContext``), so sub-graphs and tool loops reach the right rollout, through
``ainvoke``/``astream``/``astream_events`` and the blocking ``invoke``/``stream`` alike. The
model registers a :class:`GraphSampleSource` on the rollout's first call: the sample's
``messages`` are the main conversation's LangChain messages (``message.model_dump()``),
``trajectory_messages`` the same as ``ChatOpenAI`` put them on the wire, with ``model`` and
``usage`` on each assistant message. A failing policy raises ``PolicyHTTPError``
(``http_error``) or :class:`PolicyTimeoutError` (``timeout``); a call outside a rollout
:class:`NoActiveRolloutError`. Guide: ``docs/guides/langgraph.md``.
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
