"""osmosis: define, run, evaluate and serve agent rollouts for RL training of LLM agents.

The top-level package is deliberately empty: importing it must stay instant, and the
distributions ``osmosis-strands``, ``osmosis-openai-agents`` and ``osmosis-harbor`` each add a
leaf folder below it. ``extend_path`` lets those leaves live in other installed distributions.

As in osmosis-ai 0.3, the rubric API is importable from here too, loaded on first use:
``evaluate_rubric``, ``RubricResult``, ``MissingAPIKeyError``, ``ModelNotFoundError``,
``ProviderRequestError`` (see :mod:`osmosis_ai.eval.rubric`).
"""

from __future__ import annotations

import pkgutil
from typing import Any

__path__ = pkgutil.extend_path(__path__, __name__)


# 0.3's lazy top-level names (not in ``__all__``, as in 0.3, so ``import *`` stays empty).
_RUBRIC_EXPORTS = frozenset(
    {
        "evaluate_rubric",
        "RubricResult",
        "MissingAPIKeyError",
        "ModelNotFoundError",
        "ProviderRequestError",
    }
)


def __getattr__(name: str) -> Any:
    # ``__version__`` is resolved on demand: importlib.metadata costs a few ms we do not want
    # on every ``import osmosis_ai``. As in 0.3 it is the SDK's (osmosis-ai's) version.
    if name == "__version__":
        from osmosis_ai.versions import sdk_version

        return sdk_version()
    if name in _RUBRIC_EXPORTS:
        import importlib

        value = getattr(importlib.import_module("osmosis_ai.eval.rubric"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
