"""osmosis: define, run, evaluate and serve agent rollouts for RL training of LLM agents.

The top-level package is deliberately empty: importing it must stay instant, and the
distributions ``osmosis-strands``, ``osmosis-openai-agents`` and ``osmosis-harbor`` each add a
leaf folder below it. ``extend_path`` lets those leaves live in other installed distributions.
"""

from __future__ import annotations

import pkgutil

__path__ = pkgutil.extend_path(__path__, __name__)


def __getattr__(name: str) -> str:
    # ``__version__`` is resolved on demand: importlib.metadata costs a few ms we do not want
    # on every ``import osmosis_ai``.
    if name == "__version__":
        from importlib.metadata import version

        return version("osmosis-core")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
