"""Compatibility path: the config loaders moved to :mod:`osmosis_ai.config` (osmosis-core).

``from osmosis_cli.config import load_eval_config`` keeps working; new code imports
``osmosis_ai.config``, which the evaluation library (``osmosis_ai.eval``) shares. This module
re-exports exactly that module's public names, so the two can never drift apart.
"""

from __future__ import annotations

from osmosis_ai.config import *  # noqa: F403  # pyright: ignore[reportWildcardImportFromLibrary]
from osmosis_ai.config import __all__ as __all__
