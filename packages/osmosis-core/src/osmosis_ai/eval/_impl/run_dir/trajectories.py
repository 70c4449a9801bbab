"""Per-work-item trajectories: the server's ATIF file plus what the policy proxy measured.

The rollout server writes ``rollout_trials/<rollout_id>/trajectory.json`` (ATIF) from the
sample's messages. Only the proxy saw the wire, so only it knows each call's latency, retries,
and (when the upstream returns them) token ids and logprobs. This module copies the server's
trajectory to ``trajectories/row_<r>_run_<n>.json``, adds the proxy's records and removes the
server's copy, so each trajectory is stored once (``rollout_trials/<rollout_id>/`` keeps the
rollout's ``diagnostics.json`` and artifacts):

* all calls under ``extra.osmosis.llm_calls`` (always; each call's ``messages`` as a reference
  to the previous call plus the appended suffix, see :func:`osmosis_ai.eval.expand_calls`),
  and the rollout's append-only verdict under ``extra.osmosis.training_safety``;
* the reproducibility record (:mod:`osmosis_ai.eval._impl.results.reproducibility`: the run's, plus this rollout's fingerprints,
  sampling, seeds and Harbor task) under ``extra.osmosis.reproducibility``;
* when the number of agent steps equals the number of calls, each step's ``metrics`` gains the
  call's ``prompt_token_ids``, ``completion_token_ids``, ``logprobs`` and ``latency_ms`` (the
  same matching rule the public SDK applies to reported per-call metrics).

Done after the server stopped, when every trajectory is certainly on disk; best effort, never
affects a result.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from osmosis_ai.atomic_file import write_atomic
from osmosis_ai.eval._impl.results.reproducibility import rollout_record
from osmosis_ai.eval._impl.run_dir.layout import RunPaths, trajectory_name

_STEP_KEYS = ("prompt_token_ids", "completion_token_ids", "logprobs", "latency_ms")


class CallIndex:
    """``llm_calls.jsonl`` by rollout id, without holding the calls: one pass notes where each
    call's line is (and what :func:`~osmosis_ai.eval._impl.results.reproducibility.observed`
    makes of every call); :meth:`get` reads one rollout's calls back. So finalising a long run
    holds one rollout's calls at a time, not the whole file's (a 20,000-row run's is tens of
    MiB of dicts).

    Held (issue 39: no Python object per call or per rollout, so the index of a long run is
    small and its size is fixed by construction): per call line its offset and the line number
    of the same rollout's previous call (16 bytes), and an open-addressing table from a rollout
    id's ``hash`` to its last line (16 bytes per slot, at most four slots per rollout). Two ids
    with the same hash share a chain; :meth:`get` keeps the lines whose ``rollout_id`` is the one
    asked for, so a collision costs a read, never a wrong call."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._starts: array[int] = array("q")
        self._previous: array[int] = array("q")
        self._hashes: array[int] = array("q", [0]) * _MIN_SLOTS
        self._last: array[int] = array("q", [-1]) * _MIN_SLOTS
        self._rollouts = 0
        self.observed: dict[str, list[Any]] = {}
        self._fh: BinaryIO | None = None

    @classmethod
    def of(cls, paths: RunPaths) -> CallIndex:
        from osmosis_ai.eval._impl.results.reproducibility import observed

        index = cls(paths.llm_calls)
        index.observed = observed(index._scan())
        return index

    def _scan(self) -> Any:
        """Every call of the file, noting each line under its rollout id."""
        assert self._path is not None
        offset = 0
        with contextlib.suppress(OSError), self._path.open("rb") as fh:
            for line in fh:
                start, offset = offset, offset + len(line)
                call = _call(line)
                if call is not None:
                    self._note(_rollout_key(call.pop("rollout_id")), start)
                    yield call

    def _slot(self, key: int) -> int:
        """The table slot of ``key``: its own, or the empty one where it would go."""
        mask = len(self._last) - 1
        slot = key & mask
        while self._last[slot] >= 0 and self._hashes[slot] != key:
            slot = (slot + 1) & mask
        return slot

    def _note(self, key: int, start: int) -> None:
        slot = self._slot(key)
        self._previous.append(self._last[slot])
        if self._last[slot] < 0:
            self._rollouts += 1
            self._hashes[slot] = key
        self._last[slot] = len(self._starts)
        self._starts.append(start)
        if self._rollouts * 2 > len(self._last):
            self._grow()

    def _grow(self) -> None:
        hashes, last = self._hashes, self._last
        self._hashes = array("q", [0]) * (len(last) * 2)
        self._last = array("q", [-1]) * (len(last) * 2)
        for key, line in zip(hashes, last, strict=True):
            if line >= 0:
                slot = self._slot(key)
                self._hashes[slot], self._last[slot] = key, line

    def get(self, rollout_id: str, default: Any = None) -> list[dict[str, Any]]:
        """The calls of ``rollout_id`` in file order (``default``, else ``[]``, when none)."""
        line = self._last[self._slot(_rollout_key(rollout_id))] if self._path is not None else -1
        starts: list[int] = []
        while line >= 0:
            starts.append(self._starts[line])
            line = self._previous[line]
        if self._fh is None and starts:
            assert self._path is not None
            self._fh = self._path.open("rb")
        calls = []
        for start in reversed(starts):
            assert self._fh is not None
            self._fh.seek(start)
            call = _call(self._fh.readline())
            if call is not None and call.pop("rollout_id") == rollout_id:
                calls.append(call)
        if not calls:
            return [] if default is None else default
        return calls

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


#: The smallest table of :class:`CallIndex` (a power of two).
_MIN_SLOTS = 8


def _rollout_key(rollout_id: str) -> int:
    """A rollout id's key in :class:`CallIndex` (64 bits on a 64-bit build; never -1)."""
    return hash(rollout_id)


def _call(line: bytes) -> dict[str, Any] | None:
    try:
        call = json.loads(line)
    except ValueError:
        return None  # a torn last line after a crash
    if isinstance(call, dict) and isinstance(call.get("rollout_id"), str):
        return call
    return None


def _files(paths: RunPaths, record: dict[str, Any]) -> tuple[str, str]:
    """The item's trajectory file and its name relative to the run folder, as strings: a
    ``Path`` per row would have :mod:`pathlib` ``sys.intern`` its parts (the row's file name,
    the rollout id), and interned strings are immortal on CPython 3.12, so each row of every
    run would stay in memory until the process exits (issue 39)."""
    name = trajectory_name(int(record["row_index"]), int(record["run_index"]))
    folder, relative, _ = _folders(paths)
    return os.path.join(folder, name), f"{relative}/{name}"


@functools.lru_cache(maxsize=8)
def _folders(paths: RunPaths) -> tuple[str, str, str]:
    """``trajectories/``, the same relative to the run folder (as the index records it), and
    ``rollout_trials/``, as strings."""
    folder = paths.trajectories
    return (
        os.fspath(folder),
        folder.relative_to(paths.root).as_posix(),
        os.fspath(paths.rollout_trials),
    )


def assemble_trajectory(
    paths: RunPaths,
    record: dict[str, Any],
    calls: list[dict[str, Any]],
    reproducibility: dict[str, Any] | None = None,
) -> tuple[str, dict[str, Any]] | None:
    """Write the item's trajectory; returns its path relative to the run dir and the document
    written, or ``None``."""
    rollout_id = record.get("rollout_id")
    if not isinstance(rollout_id, str):
        return None
    source = os.path.join(_folders(paths)[2], rollout_id, "trajectory.json")
    target, relative = _files(paths, record)
    try:
        with open(source, encoding="utf-8") as fh:
            document = json.loads(fh.read())
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(document, dict):
        return None
    extra = document.setdefault("extra", {})
    osmosis = extra.setdefault("osmosis", {}) if isinstance(extra, dict) else {}
    if reproducibility is not None and isinstance(osmosis, dict):
        # The run's record with this rollout's own fingerprints, sampling, seeds, Harbor task.
        osmosis["reproducibility"] = rollout_record(reproducibility, calls, record)
    if calls:
        if isinstance(osmosis, dict):
            osmosis["llm_calls"] = calls
            if record.get("training_safety") is not None:
                osmosis["training_safety"] = record["training_safety"]
        steps = [
            s
            for s in document.get("steps", [])
            if isinstance(s, dict) and s.get("source") == "agent"
        ]
        if len(steps) == len(calls):
            for step, call in zip(steps, calls, strict=True):
                metrics = step.setdefault("metrics", {})
                if isinstance(metrics, dict):
                    for key in _STEP_KEYS:
                        if call.get(key) is not None:
                            metrics.setdefault(key, call[key])
    os.makedirs(os.path.dirname(target), exist_ok=True)
    try:
        # write_atomic: through the run's redactor, like every file under the run
        write_atomic(target, json.dumps(document, indent=2, allow_nan=False))
    except (OSError, TypeError, ValueError):
        return None
    with contextlib.suppress(OSError):
        os.unlink(source)  # the enriched copy under trajectories/ is the one record
    return relative, document


def existing_trajectory(
    paths: RunPaths, record: dict[str, Any], listing: TrajectoryListing | None = None
) -> str | None:
    key = (int(record["row_index"]), int(record["run_index"]))
    found = listing.has_trajectory(key) if listing is not None else None
    target, relative = _files(paths, record)
    if found is None:
        found = os.path.exists(target)
    return relative if found else None


#: What :func:`~osmosis_ai.eval._impl.run_dir.layout.trajectory_name` writes.
_TRAJECTORY_NAME = re.compile(r"row_(\d+)_run_(\d+)\.json")


@dataclass(frozen=True, slots=True)
class TrajectoryListing:
    """What ``trajectories/`` and ``rollout_trials/`` hold, listed once per finalisation.

    A run over ``--servers`` elsewhere has no server trajectory on this machine: without the
    listing each row paid a failed ``open`` and a ``stat``; with it, none. Held (issue 39: not
    a name per row): one byte per planned work item (``position``: its place in the plan's
    work items), 1 when ``trajectories/`` holds its file, and whether ``rollout_trials/`` holds
    anything at all.
    """

    #: ``trajectories/`` by work-item position (1: the file is there).
    trajectories: bytearray
    #: A work key's position (``None``: outside the plan, the file system answers).
    position: Callable[[tuple[int, int]], int | None]
    #: Whether ``rollout_trials/`` has any entry (a run served elsewhere has none).
    rollout_trials: bool

    @classmethod
    def of(
        cls, paths: RunPaths, position: Callable[[tuple[int, int]], int | None], size: int
    ) -> TrajectoryListing:
        found = bytearray(size)
        with contextlib.suppress(OSError), os.scandir(paths.trajectories) as entries:
            for entry in entries:  # one name at a time, not the whole listing
                match = _TRAJECTORY_NAME.fullmatch(entry.name)
                if match is None:
                    continue
                key = (int(match[1]), int(match[2]))
                at = position(key)
                if at is not None and trajectory_name(*key) == entry.name:
                    found[at] = 1
        return cls(found, position, _has_entries(paths.rollout_trials))

    def has_trajectory(self, key: tuple[int, int]) -> bool | None:
        """Whether ``trajectories/`` holds the work item's file (``None``: not listed)."""
        at = self.position(key)
        return None if at is None else bool(self.trajectories[at])


def _has_entries(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is not None
    except OSError:
        return False


def trajectory_for(
    paths: RunPaths,
    record: dict[str, Any],
    calls: list[dict[str, Any]],
    *,
    rebuild: bool,
    reproducibility: dict[str, Any] | None = None,
    listing: TrajectoryListing | None = None,
) -> tuple[str | None, dict[str, Any] | None]:
    """The item's trajectory file, building it when ``rebuild`` (item finished this session),
    and the document when it was built now (``None``: read the file when needed).

    ``listing`` (taken before the first row) skips the file system for rows whose server
    trajectory folder or trajectory file does not exist.
    """
    if rebuild and (listing is None or listing.rollout_trials):
        built = assemble_trajectory(paths, record, calls, reproducibility)
        if built is not None:
            return built
    existing = existing_trajectory(paths, record, listing)
    if existing is None and rebuild and calls:
        partial = partial_trajectory(paths, record, calls)
        if partial is not None:
            return partial
    return existing, None


def partial_trajectory(
    paths: RunPaths, record: dict[str, Any], calls: list[dict[str, Any]]
) -> tuple[str, dict[str, Any]] | None:
    """A trajectory rebuilt from the proxy's records of a rollout that wrote none (its
    workflow crashed or timed out): the last call's messages and the reply it got, marked
    ``extra.osmosis.partial``. Only what the policy saw: tool results after the last call and
    the crash itself are not in it."""
    from osmosis_ai.eval._impl.proxy.calls import expand_calls
    from osmosis_ai.rollout.trajectory.atif import SCHEMA_VERSION, convert_messages, final_metrics

    try:
        last = expand_calls(calls)[-1]
        messages = [m for m in last.get("messages") or [] if isinstance(m, dict)]
        if isinstance(last.get("response"), dict):
            messages.append(last["response"])
        steps = convert_messages(messages)
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    if not steps:
        return None
    document = {
        "schema_version": SCHEMA_VERSION,
        "session_id": record.get("rollout_id"),
        "trajectory_id": record.get("rollout_id"),
        "agent": {"name": "osmosis-eval (rebuilt from the policy proxy's records)"},
        "steps": steps,
        "final_metrics": final_metrics(steps),
        "extra": {
            "osmosis": {
                "rollout_id": record.get("rollout_id"),
                "status": record.get("status"),
                "partial": True,
                "llm_calls": calls,
            }
        },
    }
    target, relative = _files(paths, record)
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        text = json.dumps(document, indent=2, allow_nan=False)
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(text)
    except (OSError, TypeError, ValueError):
        return None
    return relative, document


__all__ = [
    "CallIndex",
    "TrajectoryListing",
    "assemble_trajectory",
    "partial_trajectory",
    "trajectory_for",
]
