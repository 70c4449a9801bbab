"""Execution backends: ``LocalBackend`` (in-process) here; ``HarborBackend`` in ``osmosis-harbor``."""

from __future__ import annotations

import pkgutil
from typing import TYPE_CHECKING

from osmosis_ai._lazy import lazy_exports
from osmosis_ai.rollout.optional_imports import install_missing_extra_hints

__path__ = pkgutil.extend_path(__path__, __name__)
install_missing_extra_hints()

_EXPORTS = {
    "ExecutionBackend": "osmosis_ai.rollout.backend.base",
    "LocalBackend": "osmosis_ai.rollout.backend.local",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names as _EXPORTS (checked by a core test)
    from osmosis_ai.rollout.backend.base import ExecutionBackend as ExecutionBackend
    from osmosis_ai.rollout.backend.local import LocalBackend as LocalBackend
