"""Worker processes for the rollout server (``serve(app, workers=N)``).

The server process keeps the protocol (admission, leases, long polls, results, trajectories,
the outbox); rollouts run in N worker processes, each with its own event loop and the backend:
forked from a zygote that holds the server's imports (:mod:`.zygote`), or started by exec,
importing the rollout's entrypoint once and rebuilding the backend from it (:mod:`.entry`). :class:`.pool.WorkerPool` implements
the :class:`~osmosis_ai.rollout.backend.base.ExecutionBackend` contract by dispatching
``execute`` to the workers, so the service cannot tell it from an in-process backend.

This package's ``__init__`` is imported by :func:`~osmosis_ai.rollout.server.serving.serve`, so
it stays standard-library only.
"""

from __future__ import annotations

import os

from osmosis_ai.errors import ConfigurationError

#: Set in every worker process: ``serve()`` there stops the import instead of serving.
ENV_WORKER = "_OSMOSIS_ROLLOUT_WORKER"
#: ``serve(app)`` without ``workers=`` reads the worker count from here (``auto`` or a number).
ENV_WORKERS = "OSMOSIS_ROLLOUT_WORKERS"
#: ``workers="auto"`` never starts more workers than this.
AUTO_WORKERS_CAP = 8
#: How much lower the workers' CPU priority is than the server process's (``nice`` 0-19).
ENV_WORKER_NICE = "OSMOSIS_ROLLOUT_WORKER_NICE"
#: Workers run at this niceness over the server's: when agent work keeps every core busy, the
#: kernel still runs the protocol process first (admission, long polls), and the workers get
#: whatever it leaves, which is nearly everything (it uses a few percent of a core per worker).
DEFAULT_WORKER_NICE = 5


class WorkerImportDone(BaseException):
    """Raised by ``serve()`` inside a worker: the entrypoint has built its app, stop importing."""


class WorkerSetupError(ConfigurationError):
    """``workers=`` was asked for but the worker processes cannot rebuild the backend."""


def in_worker() -> bool:
    return os.environ.get(ENV_WORKER) == "1"


def usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def resolve_workers(value: int | str | None) -> int:
    """``workers=`` as a count: ``None`` reads ``OSMOSIS_ROLLOUT_WORKERS`` (unset: 1, in
    process); ``"auto"`` is the usable cores, at most :data:`AUTO_WORKERS_CAP`."""
    if value is None:
        value = os.environ.get(ENV_WORKERS, "").strip() or 1
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "auto":
            return min(usable_cores(), AUTO_WORKERS_CAP)
        try:
            value = int(text)
        except ValueError:
            raise WorkerSetupError(
                f"workers={value!r} is not a number; use a positive integer or 'auto' "
                f"(check {ENV_WORKERS})"
            ) from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise WorkerSetupError(
            f"workers must be a positive integer or 'auto', got {value!r}; 1 runs rollouts in "
            "the server process"
        )
    return value


def worker_nice() -> int:
    """The niceness workers add to the server's: ``OSMOSIS_ROLLOUT_WORKER_NICE``, else
    :data:`DEFAULT_WORKER_NICE`; ``0`` runs them at the server's priority."""
    text = os.environ.get(ENV_WORKER_NICE, "").strip()
    value = (int(text) if text.isdigit() else -1) if text else DEFAULT_WORKER_NICE
    if 0 <= value <= 19:
        return value
    raise WorkerSetupError(
        f"{ENV_WORKER_NICE}={text!r} is not a niceness from 0 to 19; set it to how much "
        "lower the workers' CPU priority should be than the server's (0: the same), or "
        f"unset it for the default {DEFAULT_WORKER_NICE}"
    )
