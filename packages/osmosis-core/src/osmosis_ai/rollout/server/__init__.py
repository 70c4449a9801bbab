"""The rollout server (extra ``server``): ``create_rollout_server`` and ``serve``.

Importing this package without FastAPI installed raises ``ModuleNotFoundError`` that names the
install command, instead of a bare "No module named 'fastapi'" deep inside a user's script.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from osmosis_ai._lazy import exports_from, lazy_exports
from osmosis_ai.rollout.optional_imports import install_hint


def _missing(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):  # a broken install, or a module blocked in sys.modules
        return True


for _dependency in ("fastapi", "uvicorn"):
    if _missing(_dependency):
        raise ModuleNotFoundError(
            f"The osmosis rollout server needs {_dependency!r}, which is not installed. "
            f"Install the server extra with: {install_hint('server')}",
            name=_dependency,
        )

_APP = "osmosis_ai.rollout.server.app"
_EXPORTS = exports_from(
    {
        _APP: (
            "create_rollout_server DEFAULT_POLLING_LEASE_TIMEOUT_SEC DEFAULT_RESULT_RETENTION_SEC "
            "DEFAULT_RESULT_WAIT_TIMEOUT_SEC POLLING_LEASE_HEADER"
        ),
        "osmosis_ai.rollout.server.serving": "serve",
    }
)
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names as _EXPORTS (checked by a core test)
    from osmosis_ai.rollout.server.app import (
        DEFAULT_POLLING_LEASE_TIMEOUT_SEC as DEFAULT_POLLING_LEASE_TIMEOUT_SEC,
    )
    from osmosis_ai.rollout.server.app import (
        DEFAULT_RESULT_RETENTION_SEC as DEFAULT_RESULT_RETENTION_SEC,
    )
    from osmosis_ai.rollout.server.app import (
        DEFAULT_RESULT_WAIT_TIMEOUT_SEC as DEFAULT_RESULT_WAIT_TIMEOUT_SEC,
    )
    from osmosis_ai.rollout.server.app import POLLING_LEASE_HEADER as POLLING_LEASE_HEADER
    from osmosis_ai.rollout.server.app import create_rollout_server as create_rollout_server
    from osmosis_ai.rollout.server.serving import serve as serve
