"""trajectory_for with a TrajectoryListing: the same answers as asking the file system per row."""

from __future__ import annotations

import json
from pathlib import Path

from osmosis_ai.eval._impl.run_dir.layout import RunPaths
from osmosis_ai.eval._impl.run_dir.trajectories import TrajectoryListing, trajectory_for


def _paths(tmp_path: Path) -> RunPaths:
    paths = RunPaths(tmp_path / "run")
    paths.create()
    return paths


def _record(rollout_id: str, row: int) -> dict[str, object]:
    return {"rollout_id": rollout_id, "row_index": row, "run_index": 0, "status": "success"}


def _position(key: tuple[int, int]) -> int | None:
    """Three dataset rows, one sample each (what a session's plan gives)."""
    row, run = key
    return row if run == 0 and 0 <= row < 3 else None


def test_listing_builds_from_the_server_trajectory_and_finds_earlier_files(
    tmp_path: Path,
) -> None:
    paths = _paths(tmp_path)
    source = paths.rollout_trials / "r-built" / "trajectory.json"
    source.parent.mkdir()
    source.write_text(json.dumps({"steps": []}), encoding="utf-8")
    earlier = paths.trajectory_file(1, 0)
    earlier.write_text("{}", encoding="utf-8")
    listing = TrajectoryListing.of(paths, _position, 3)

    built, document = trajectory_for(
        paths, _record("r-built", 0), [], rebuild=True, listing=listing
    )
    kept = trajectory_for(paths, _record("r-gone", 1), [], rebuild=True, listing=listing)
    missing = trajectory_for(paths, _record("r-none", 2), [], rebuild=True, listing=listing)

    assert built == "trajectories/row_0_run_0.json"
    written = json.loads((paths.root / built).read_text(encoding="utf-8"))
    assert written["steps"] == []
    assert document == written  # what finalisation reads its facts from, without a re-read
    assert not source.exists()  # the enriched copy is the one record
    # an earlier session's file (no source), and nothing: neither was built now
    assert kept == ("trajectories/row_1_run_0.json", None)
    assert missing == (None, None)
    for record in (_record("r-gone", 1), _record("r-none", 2)):
        assert trajectory_for(paths, record, [], rebuild=True) == trajectory_for(
            paths, record, [], rebuild=True, listing=listing
        )


def test_listing_of_a_run_without_folders_is_empty(tmp_path: Path) -> None:
    listing = TrajectoryListing.of(RunPaths(tmp_path / "absent"), _position, 3)

    assert listing.trajectories == bytearray(3)
    assert listing.rollout_trials is False
