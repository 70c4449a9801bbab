"""ATIF trajectories of finished rollouts: ``<home>/<rollout_id>/trajectory.json``.

:func:`save_trajectory` (async, never raises) is what the rollout server calls after every
rollout; :func:`convert_sample_to_trajectory` builds the document; :func:`configure_retention`
and :func:`prune_rollout_dirs` bound disk use. See :mod:`~osmosis_ai.rollout.trajectory.atif`
for the mapping and :mod:`~osmosis_ai.rollout.trajectory.writer` for files and retention.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai._lazy import lazy_exports

_P = __name__
_EXPORTS = {
    "save_trajectory": f"{_P}.writer",
    "configure_retention": f"{_P}.writer",
    "prune_rollout_dirs": f"{_P}.writer",
    "RetentionPolicy": f"{_P}.writer",
    "dumps_trajectory": f"{_P}.writer",
    "convert_sample_to_trajectory": f"{_P}.atif",
    "SCHEMA_VERSION": f"{_P}.atif",
    "Trajectory": f"{_P}.atif",
    "TrajectoryReport": f"{_P}.report",
    "report_from_response": f"{_P}.report",
}
__all__ = [
    "SCHEMA_VERSION",
    "RetentionPolicy",
    "Trajectory",
    "TrajectoryReport",
    "configure_retention",
    "convert_sample_to_trajectory",
    "dumps_trajectory",
    "prune_rollout_dirs",
    "report_from_response",
    "save_trajectory",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from osmosis_ai.rollout.trajectory.atif import (
        SCHEMA_VERSION,
        Trajectory,
        convert_sample_to_trajectory,
    )
    from osmosis_ai.rollout.trajectory.report import TrajectoryReport, report_from_response
    from osmosis_ai.rollout.trajectory.writer import (
        RetentionPolicy,
        configure_retention,
        dumps_trajectory,
        prune_rollout_dirs,
        save_trajectory,
    )
