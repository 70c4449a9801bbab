"""Retention of rollout folders under the osmosis home: how many, and how old, to keep.

Rollout folders accumulate under the osmosis home, so the trajectory writer bounds them as it
writes (see :mod:`~osmosis_ai.rollout.trajectory.writer` for when). This module holds the bounds
(:class:`RetentionPolicy`, from the environment: ``OSMOSIS_TRAJECTORY_MAX_ROLLOUTS``,
``OSMOSIS_TRAJECTORY_MAX_AGE_SEC``; ``0`` disables that bound), the oldest-first index of one
root's folders that lets a write enforce them at no extra I/O (:class:`FolderIndex`), and the
one-shot :func:`prune_rollout_dirs`. Only folders that hold a ``trajectory.json`` or
``diagnostics.json`` are ever considered, so other things in the home (the server outbox, eval
runs) are safe.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

# The writer's logger: pruning is part of writing, and log filters set on the writer keep
# catching these messages.
logger = logging.getLogger("osmosis_ai.rollout.trajectory.writer")

TRAJECTORY_FILE = "trajectory.json"
DIAGNOSTICS_FILE = "diagnostics.json"
ENV_MAX_ROLLOUTS = "OSMOSIS_TRAJECTORY_MAX_ROLLOUTS"
ENV_MAX_AGE_SEC = "OSMOSIS_TRAJECTORY_MAX_AGE_SEC"


@dataclass(slots=True)
class RetentionPolicy:
    """Bounds on the rollout folders kept under the osmosis home (``0`` = no bound)."""

    max_rollouts: int = 10_000
    max_age_sec: float = 7 * 24 * 3600.0
    prune_every: int = 500
    prune_interval_sec: float = 60.0

    @classmethod
    def from_env(cls) -> RetentionPolicy:
        policy = cls()
        for env, attr, kind in (
            (ENV_MAX_ROLLOUTS, "max_rollouts", int),
            (ENV_MAX_AGE_SEC, "max_age_sec", float),
        ):
            raw = os.environ.get(env)
            if raw:
                try:
                    value = kind(raw)
                except ValueError:
                    logger.warning("ignoring %s=%r: expected a number", env, raw)
                    continue
                setattr(policy, attr, max(value, 0))
        return policy


class FolderIndex:
    """The rollout folders under one root, oldest first, so each write can enforce the bounds
    by deleting from the front (used from the writer thread only)."""

    def __init__(self, root: Path) -> None:
        self.folders: dict[str, float] = {
            os.fspath(path): mtime for mtime, path in sorted(_rollout_dirs(root))
        }

    def add(self, folder: str, policy: RetentionPolicy) -> int:
        now = time.time()
        self.folders.pop(folder, None)
        self.folders[folder] = now
        cutoff = now - policy.max_age_sec if policy.max_age_sec else None
        removed = 0
        while self.folders:
            oldest, mtime = next(iter(self.folders.items()))
            too_many = bool(policy.max_rollouts) and len(self.folders) > policy.max_rollouts
            if not too_many and (cutoff is None or mtime >= cutoff):
                break
            del self.folders[oldest]
            if oldest != folder:
                shutil.rmtree(oldest, ignore_errors=True)
                removed += 1
        return removed


def _rollout_dirs(root: Path) -> list[tuple[float, Path]]:
    found: list[tuple[float, Path]] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return found
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        for name in (TRAJECTORY_FILE, DIAGNOSTICS_FILE):
            try:
                mtime = os.stat(os.path.join(entry.path, name)).st_mtime
            except OSError:
                continue
            found.append((mtime, Path(entry.path)))
            break
    return found


def prune_rollout_dirs(root: Path, *, max_rollouts: int = 0, max_age_sec: float = 0.0) -> int:
    """Delete rollout folders beyond ``max_rollouts`` (oldest first) or older than ``max_age_sec``.

    Returns how many were deleted. Only folders holding a trajectory or diagnostics file count.
    """
    dirs = sorted(_rollout_dirs(root), reverse=True)  # newest first
    cutoff = time.time() - max_age_sec if max_age_sec else None
    removed = 0
    for index, (mtime, path) in enumerate(dirs):
        too_many = bool(max_rollouts) and index >= max_rollouts
        too_old = cutoff is not None and mtime < cutoff
        if too_many or too_old:
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    if removed:
        logger.info("pruned %d old rollout folder(s) under %s", removed, root)
    return removed
