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
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osmosis_ai.atomic_file import write_atomic
from osmosis_ai.eval._impl.results.reproducibility import rollout_record
from osmosis_ai.eval._impl.run_dir.layout import RunPaths, trajectory_name

_STEP_KEYS = ("prompt_token_ids", "completion_token_ids", "logprobs", "latency_ms")


class CallIndex:
    """``llm_calls.jsonl`` by rollout id, without holding the calls: one pass notes where each
    rollout's lines are (and what :func:`~osmosis_ai.eval._impl.results.reproducibility.observed`
    makes of every call); :meth:`get` reads one rollout's calls back. So finalising a long run
    holds one rollout's calls at a time, not the whole file's (a 20,000-row run's is tens of
    MiB of dicts)."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._spans: dict[str, list[tuple[int, int]]] = {}
        self.observed: dict[str, list[Any]] = {}
        self._fd = -1

    @classmethod
    def of(cls, paths: RunPaths) -> CallIndex:
        from osmosis_ai.eval._impl.results.reproducibility import observed

        index = cls(paths.llm_calls)
        index.observed = observed(index._scan())
        return index

    def _scan(self) -> Any:
        """Every call of the file, noting each line's span under its rollout id."""
        assert self._path is not None
        offset = 0
        with contextlib.suppress(OSError), self._path.open("rb") as fh:
            for line in fh:
                start, offset = offset, offset + len(line)
                call = _call(line)
                if call is not None:
                    self._spans.setdefault(call.pop("rollout_id"), []).append((start, len(line)))
                    yield call

    def get(self, rollout_id: str, default: Any = None) -> list[dict[str, Any]]:
        """The calls of ``rollout_id`` in file order (``default``, else ``[]``, when none)."""
        spans = self._spans.get(rollout_id)
        if not spans or self._path is None:
            return [] if default is None else default
        if self._fd < 0:
            self._fd = os.open(self._path, os.O_RDONLY)
        calls = []
        for start, length in spans:
            call = _call(os.pread(self._fd, length, start))
            if call is not None:
                call.pop("rollout_id")
                calls.append(call)
        return calls

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _call(line: bytes) -> dict[str, Any] | None:
    try:
        call = json.loads(line)
    except ValueError:
        return None  # a torn last line after a crash
    if isinstance(call, dict) and isinstance(call.get("rollout_id"), str):
        return call
    return None


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
    source = paths.rollout_trials / rollout_id / "trajectory.json"
    target = paths.trajectory_file(int(record["row_index"]), int(record["run_index"]))
    try:
        document = json.loads(source.read_text(encoding="utf-8"))
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
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        # write_atomic: through the run's redactor, like every file under the run
        write_atomic(target, json.dumps(document, indent=2, allow_nan=False))
    except (OSError, TypeError, ValueError):
        return None
    with contextlib.suppress(OSError):
        source.unlink()  # the enriched copy under trajectories/ is the one record
    return target.relative_to(paths.root).as_posix(), document


def existing_trajectory(
    paths: RunPaths, record: dict[str, Any], listing: TrajectoryListing | None = None
) -> str | None:
    if listing is not None:  # no Path objects per row: names against the listing
        name = trajectory_name(int(record["row_index"]), int(record["run_index"]))
        return f"{listing.folder}/{name}" if name in listing.trajectories else None
    target = paths.trajectory_file(int(record["row_index"]), int(record["run_index"]))
    if target.exists():
        return target.relative_to(paths.root).as_posix()
    return None


@dataclass(frozen=True, slots=True)
class TrajectoryListing:
    """What ``trajectories/`` and ``rollout_trials/`` hold, listed once per finalisation.

    A run over ``--servers`` elsewhere has no server trajectory on this machine: without the
    listing each row paid a failed ``open`` and a ``stat``; with it, two set look-ups.
    """

    trajectories: frozenset[str]
    rollout_trials: frozenset[str]
    #: ``trajectories/`` relative to the run folder, as the index records it.
    folder: str = "trajectories"

    @classmethod
    def of(cls, paths: RunPaths) -> TrajectoryListing:
        folder = paths.trajectories.relative_to(paths.root).as_posix()
        return cls(_names(paths.trajectories), _names(paths.rollout_trials), folder)


def _names(folder: Path) -> frozenset[str]:
    try:
        return frozenset(os.listdir(folder))
    except OSError:
        return frozenset()


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
    if rebuild and (listing is None or record.get("rollout_id") in listing.rollout_trials):
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
    target = paths.trajectory_file(int(record["row_index"]), int(record["run_index"]))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(document, indent=2, allow_nan=False), encoding="utf-8")
    except (OSError, TypeError, ValueError):
        return None
    return target.relative_to(paths.root).as_posix(), document


__all__ = [
    "CallIndex",
    "TrajectoryListing",
    "assemble_trajectory",
    "partial_trajectory",
    "trajectory_for",
]
