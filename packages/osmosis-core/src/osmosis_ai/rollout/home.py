"""Where osmosis keeps per-rollout files (trajectories, artifacts, the server outbox).

``<home>/<rollout_id>/trajectory.json``, ``<home>/<rollout_id>/artifacts/``, ``<home>/outbox/``.
The home is ``_OSMOSIS_ROLLOUT_ARTIFACT_ROOT`` (set by a supervisor such as ``osmosis eval run``
to put a run's files next to its results), else ``OSMOSIS_HOME``, else ``~/.osmosis``.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

ENV_ARTIFACT_ROOT = "_OSMOSIS_ROLLOUT_ARTIFACT_ROOT"
ENV_HOME = "OSMOSIS_HOME"


def osmosis_home() -> Path:
    """The home for the current environment (read on every call; tests and supervisors change it).

    Building the ``Path`` (``expanduser``, ``Path.home()``) costs 4-10 µs and LocalBackend and
    the trajectory writer ask once per rollout, so the result is memoized on the environment
    values it depends on; a ``Path`` is immutable, so sharing it is safe.
    """
    environ = os.environ
    return _home_for(environ.get(ENV_ARTIFACT_ROOT), environ.get(ENV_HOME), environ.get("HOME"))


@functools.lru_cache(maxsize=8)
def _home_for(artifact_root: str | None, home: str | None, user_home: str | None) -> Path:
    for value in (artifact_root, home):
        if value:
            return Path(value).expanduser()
    return Path.home() / ".osmosis"


def osmosis_cache_dir() -> Path:
    """``$OSMOSIS_HOME/cache`` (default ``~/.osmosis/cache``): reusable across runs (bundles, tasks).

    Deliberately not under the per-run artifact root (``_OSMOSIS_ROLLOUT_ARTIFACT_ROOT``).
    """
    environ = os.environ
    return _home_for(None, environ.get(ENV_HOME), environ.get("HOME")) / "cache"


def rollout_dir(rollout_id: str, root: Path | None = None) -> Path:
    """``<home>/<rollout_id>``; the id is validated, so it cannot escape the home."""
    from osmosis_ai.rollout.identifiers import validate_rollout_id

    return (root if root is not None else osmosis_home()) / validate_rollout_id(rollout_id)
