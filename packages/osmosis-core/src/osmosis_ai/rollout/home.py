"""Where osmosis keeps per-rollout files (trajectories, artifacts, the server outbox).

``<home>/<rollout_id>/trajectory.json``, ``<home>/<rollout_id>/artifacts/``, ``<home>/outbox/``.
The home is ``_OSMOSIS_ROLLOUT_ARTIFACT_ROOT`` (set by a supervisor such as ``osmosis eval run``
to put a run's files next to its results), else ``OSMOSIS_HOME``, else ``~/.osmosis``.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_ARTIFACT_ROOT = "_OSMOSIS_ROLLOUT_ARTIFACT_ROOT"
ENV_HOME = "OSMOSIS_HOME"


def osmosis_home() -> Path:
    for var in (ENV_ARTIFACT_ROOT, ENV_HOME):
        value = os.environ.get(var)
        if value:
            return Path(value).expanduser()
    return Path.home() / ".osmosis"


def rollout_dir(rollout_id: str, root: Path | None = None) -> Path:
    """``<home>/<rollout_id>``; the id is validated, so it cannot escape the home."""
    from osmosis_ai.rollout.identifiers import validate_rollout_id

    return (root if root is not None else osmosis_home()) / validate_rollout_id(rollout_id)
