"""The run directory: names, file paths, the exclusive lock and ``--fresh`` archiving.

Layout of ``<output_root>/<run_name>/`` (``output_root`` defaults to ``.osmosis/evals``)::

    manifest.json        inputs the run is locked to (see manifest.py)
    events.jsonl         the durable journal (one line per finished work item; see journal.py)
    index.jsonl          one line per work item: status, reward, trajectory file (rebuilt)
    metrics.json         summary statistics (rebuilt at the end of every session)
    logs.txt             controller log, secrets redacted, mode 0600
    rollout_server.log   stdout+stderr of the rollout's server process
    llm_calls.jsonl      per-call records of the policy proxy (one line per model call)
    trajectories/row_<r>_run_<n>.json   ATIF trajectory per work item (+ proxy call metrics)
    rollout_trials/<rollout_id>/...     what the rollout server wrote (its artifact root)

Why a lock file outside the run directory: ``--fresh`` renames the run directory, and two
concurrent ``eval run`` of the same name must exclude each other even across that rename.
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from osmosis_ai._util.file_lock import is_locked, try_lock
from osmosis_ai.errors import EvalError

DEFAULT_OUTPUT_ROOT = Path(".osmosis") / "evals"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_LOCK_RETRIES = 10
_LOCK_RETRY_SEC = 0.05


class RunLayoutError(EvalError, ValueError):
    """Invalid run name, or the run is locked by another process."""


def validate_run_name(name: str) -> str:
    """≤96 chars of ``[A-Za-z0-9._-]`` starting alphanumeric; ``.locks`` is reserved."""
    if not _NAME_RE.match(name) or name == ".locks" or name.endswith(".archive"):
        raise RunLayoutError(
            f"invalid run name {name!r}: use up to 96 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def generate_run_name(config_stem: str, inputs_digest: str, now: datetime | None = None) -> str:
    """``<config-stem>-<YYYYMMDDTHHMMSSZ>-<digest[:8]>``."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    stem = re.sub(r"[^A-Za-z0-9._-]", "-", config_stem).strip("-._") or "eval"
    return validate_run_name(f"{stem[:70]}-{stamp}-{inputs_digest[:8]}")


@dataclass(frozen=True, slots=True)
class RunPaths:
    """Every file of one run."""

    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"

    @property
    def journal(self) -> Path:
        return self.root / "events.jsonl"

    @property
    def index(self) -> Path:
        return self.root / "index.jsonl"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.json"

    @property
    def logs(self) -> Path:
        return self.root / "logs.txt"

    @property
    def server_log(self) -> Path:
        return self.root / "rollout_server.log"

    @property
    def local_model_log(self) -> Path:
        """``--model local``: the model server's output."""
        return self.root / "local_model.log"

    @property
    def llm_calls(self) -> Path:
        return self.root / "llm_calls.jsonl"

    @property
    def trajectories(self) -> Path:
        return self.root / "trajectories"

    @property
    def rollout_trials(self) -> Path:
        return self.root / "rollout_trials"

    def trajectory_file(self, row_index: int, run_index: int) -> Path:
        return self.trajectories / trajectory_name(row_index, run_index)

    def create(self) -> None:
        for folder in (self.root, self.trajectories, self.rollout_trials):
            folder.mkdir(parents=True, exist_ok=True)


def trajectory_name(row_index: int, run_index: int) -> str:
    """The file name of a work item's trajectory under ``trajectories/``."""
    return f"row_{row_index}_run_{run_index}.json"


def archive_run(root: Path, now: datetime | None = None) -> Path | None:
    """``--fresh``: move an existing run to ``<name>.archive-<utc>``; returns the new path."""
    if not root.exists():
        return None
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S%fZ")
    target = root.with_name(f"{root.name}.archive-{stamp}")
    root.rename(target)
    return target


def lock_path(output_root: Path, run_name: str) -> Path:
    return output_root / ".locks" / f"{run_name}.lock"


def session_running(run_dir: Path, run_name: str) -> bool:
    """Whether a live ``osmosis eval run`` session holds the run now (its :class:`RunLock`)."""
    return is_locked(lock_path(run_dir.parent, run_name))


class RunLock:
    """Exclusive ``flock`` on ``<output_root>/.locks/<name>.lock`` for the life of a session.

    The kernel drops the lock when the process dies (also on ``kill -9``), so a crashed run
    never needs manual unlocking.
    """

    def __init__(self, output_root: Path, run_name: str) -> None:
        self.path = lock_path(output_root, run_name)
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = try_lock(self.path)
        for _ in range(_LOCK_RETRIES):
            if fd is not None:
                break
            # `eval list` / `show` probe the lock for an instant (session_running): not a holder.
            time.sleep(_LOCK_RETRY_SEC)
            fd = try_lock(self.path)
        if fd is None:
            raise RunLayoutError(
                f"another `osmosis eval run` already holds run {self.path.stem!r} "
                f"({self.path}); wait for it to finish or choose another --name"
            )
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()
