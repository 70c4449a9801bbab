"""ATIF trajectories of finished rollouts: ``<home>/<rollout_id>/trajectory.json``.

:func:`save_trajectory` (async, never raises) is what the rollout server calls after every
rollout; :func:`convert_sample_to_trajectory` builds the document; :func:`configure_retention`
and :func:`prune_rollout_dirs` bound disk use. See :mod:`~osmosis_ai.rollout.trajectory.atif`
for the mapping, :mod:`~osmosis_ai.rollout.trajectory.writer` for files,
:mod:`~osmosis_ai.rollout.trajectory.retention` for retention and
:mod:`~osmosis_ai.rollout.trajectory.encoding` for the JSON text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai._lazy import exports_from, lazy_exports

_P = __name__
_EXPORTS = exports_from(
    {
        f"{_P}.writer": "save_trajectory configure_retention",
        f"{_P}.retention": "prune_rollout_dirs RetentionPolicy",
        f"{_P}.encoding": "dumps_trajectory",
        f"{_P}.atif": "convert_sample_to_trajectory SCHEMA_VERSION Trajectory",
        f"{_P}.report": "TrajectoryReport report_from_response",
    }
)
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names as _EXPORTS (checked by a core test)
    from osmosis_ai.rollout.trajectory.atif import SCHEMA_VERSION as SCHEMA_VERSION
    from osmosis_ai.rollout.trajectory.atif import Trajectory as Trajectory
    from osmosis_ai.rollout.trajectory.atif import (
        convert_sample_to_trajectory as convert_sample_to_trajectory,
    )
    from osmosis_ai.rollout.trajectory.encoding import dumps_trajectory as dumps_trajectory
    from osmosis_ai.rollout.trajectory.report import TrajectoryReport as TrajectoryReport
    from osmosis_ai.rollout.trajectory.report import report_from_response as report_from_response
    from osmosis_ai.rollout.trajectory.retention import RetentionPolicy as RetentionPolicy
    from osmosis_ai.rollout.trajectory.retention import prune_rollout_dirs as prune_rollout_dirs
    from osmosis_ai.rollout.trajectory.writer import configure_retention as configure_retention
    from osmosis_ai.rollout.trajectory.writer import save_trajectory as save_trajectory
