"""trajectory_for with a TrajectoryListing (the same answers as asking the file system per row)
and CallIndex, in memory that holds no object per row (issue 39)."""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path

import pytest

from osmosis_ai.eval._impl.run_dir import trajectories
from osmosis_ai.eval._impl.run_dir.layout import RunPaths
from osmosis_ai.eval._impl.run_dir.trajectories import (
    CallIndex,
    TrajectoryListing,
    existing_trajectory,
    trajectory_for,
)


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


def test_listing_flags_only_the_names_trajectory_name_writes(tmp_path: Path) -> None:
    """One byte per planned work item, whatever trajectories/ holds: a name the layout does
    not write (a zero-padded index, another file) or a work item outside the plan is no hit."""
    paths = _paths(tmp_path)
    for name in ("row_2_run_0.json", "row_02_run_0.json", "row_9_run_0.json", "notes.txt"):
        (paths.trajectories / name).write_text("{}", encoding="utf-8")
    listing = TrajectoryListing.of(paths, _position, 3)

    assert listing.trajectories == bytearray([0, 0, 1])
    assert listing.rollout_trials is False
    assert listing.has_trajectory((2, 0)) is True
    assert listing.has_trajectory((9, 0)) is None  # outside the plan: the file system answers
    assert existing_trajectory(paths, _record("r", 9), listing) == "trajectories/row_9_run_0.json"


def _calls_file(path: Path, rollouts: int, calls_each: int) -> list[str]:
    """``llm_calls.jsonl`` with the rollouts' calls interleaved (as concurrent rollouts write
    them), a line that is not a call and a torn last line; returns the rollout ids."""
    ids = [f"r{i:05d}" for i in range(rollouts)]
    lines = [
        json.dumps({"rollout_id": rid, "call": c, "system_fingerprint": "fp"})
        for c in range(calls_each)
        for rid in ids
    ]
    lines.insert(1, json.dumps(["not", "a", "call"]))
    path.write_text("\n".join(lines) + '\n{"rollout_id": "r00000", "ca', encoding="utf-8")
    return ids


def _reachable(root: object) -> int:
    """How many objects the garbage collector can reach from ``root`` (arrays hold numbers,
    not objects)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, type):
            continue
        seen.add(id(obj))
        stack.extend(gc.get_referents(obj))
    return len(seen)


@pytest.mark.parametrize("colliding", [False, True])
def test_call_index_gives_each_rollouts_calls_in_file_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, colliding: bool
) -> None:
    """Every rollout's calls, in file order, with the rollout id taken off; with every id on
    one key (a hash collision) each still gets only its own."""
    if colliding:
        monkeypatch.setattr(trajectories, "_rollout_key", lambda rollout_id: 7)
    paths = _paths(tmp_path)
    ids = _calls_file(paths.llm_calls, 40, 3)
    index = CallIndex.of(paths)
    try:
        for rid in ids:
            assert index.get(rid) == [{"call": c, "system_fingerprint": "fp"} for c in range(3)]
        assert index.get("r-unknown") == []
        assert index.get("r-unknown", default=[{"x": 1}]) == [{"x": 1}]
    finally:
        index.close()
    assert index.observed["system_fingerprints"] == ["fp"]


def test_call_index_holds_no_object_per_rollout_or_call(tmp_path: Path) -> None:
    """Issue 39: the index of a long run is arrays, not a dict of lists of spans: the objects
    it reaches are as many for 2,000 rollouts as for 20, and its arrays take 16 bytes per call
    and at most 64 per rollout."""
    small, large = tmp_path / "small", tmp_path / "large"
    found = []
    for folder, rollouts in ((small, 20), (large, 2000)):
        paths = _paths(folder)
        _calls_file(paths.llm_calls, rollouts, 2)
        index = CallIndex.of(paths)
        index.observed = {}  # what the calls say, not the index
        found.append((_reachable(index), index))
    (few, _), (many, index) = found
    assert few == many
    held = sum(
        sys.getsizeof(a) for a in (index._starts, index._previous, index._hashes, index._last)
    )
    assert held <= 4000 * 16 + 2000 * 64 + 1024


def test_finalising_a_row_interns_none_of_its_path_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pathlib ``sys.intern``s every part of a path it parses, and interned strings are
    immortal on CPython 3.12: a Path per row would keep each rollout id and trajectory name
    for the life of the process (issue 39). Building, finding and rebuilding trajectories goes
    through none."""
    interned: list[str] = []
    real_intern = sys.intern

    def spy(text: str) -> str:
        interned.append(text)
        return real_intern(text)

    monkeypatch.setattr(sys, "intern", spy)
    str(tmp_path / "probe-part")  # the spy sees pathlib's parsing (so the test can fail)
    assert "probe-part" in interned
    paths = _paths(tmp_path)
    listing = TrajectoryListing.of(paths, _position, 3)
    interned.clear()
    source = os.path.join(os.fspath(paths.rollout_trials), "r-built-xyz")  # a str: no parts
    call = {"messages": [{"role": "user", "content": "hi"}], "response": {"role": "assistant"}}
    for record in (_record("r-built-xyz", 0), _record("r-gone-xyz", 1), _record("r-none-xyz", 2)):
        os.makedirs(source, exist_ok=True)
        with open(os.path.join(source, "trajectory.json"), "w", encoding="utf-8") as fh:
            fh.write('{"steps": []}')
        trajectory_for(paths, record, [call], rebuild=True, listing=listing)
        trajectory_for(paths, record, [], rebuild=False, listing=listing)
        trajectory_for(paths, record, [], rebuild=False)
    built = [name for name in os.listdir(paths.trajectories)]
    assert sorted(built) == ["row_0_run_0.json", "row_1_run_0.json", "row_2_run_0.json"]
    per_row = {"r-built-xyz", "r-gone-xyz", "r-none-xyz", *built}
    assert sorted(per_row & set(interned)) == []
