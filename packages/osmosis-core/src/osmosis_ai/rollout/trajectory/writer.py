"""Saving ``<home>/<rollout_id>/trajectory.json`` (and ``diagnostics.json``), best effort.

:func:`save_trajectory` never raises and never affects a rollout's status or reward: any
failure is logged. Conversion, JSON encoding and file I/O run on one background thread that
takes jobs in batches, so the event loop only waits for the result. Files are written
atomically (temporary file then rename), so readers never see half a document.

**Retention.** Rollout folders accumulate under the osmosis home, so the writer bounds them as
it writes: it keeps at most ``max_rollouts`` folders and deletes those whose trajectory is older
than ``max_age_sec``. It lists the home once (on its first write there) and then keeps an
oldest-first index of the folders, so a write beyond the bound deletes the oldest folder at once,
at no extra I/O. Other processes may write to the same home, so the index is rebuilt from the
disk now and then (after ``prune_every`` writes and at least ``prune_interval_sec`` apart),
which also applies both bounds to their folders. Only folders that hold a ``trajectory.json`` or
``diagnostics.json`` are ever considered, so other things in the home (the server outbox, eval
runs) are safe. Defaults: 10,000 folders, 7 days. Configure with :func:`configure_retention`
or the environment (``OSMOSIS_TRAJECTORY_MAX_ROLLOUTS``, ``OSMOSIS_TRAJECTORY_MAX_AGE_SEC``;
``0`` disables that bound). When a supervisor sets ``_OSMOSIS_ROLLOUT_ARTIFACT_ROOT`` (e.g.
``osmosis eval run`` keeping trajectories next to its results) or ``artifact_root`` is passed,
that directory belongs to the caller and is never pruned. The bounds and the folder index are in
:mod:`~osmosis_ai.rollout.trajectory.retention`; the JSON text in
:mod:`~osmosis_ai.rollout.trajectory.encoding`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from osmosis_ai._util.redaction import process_redactor, redact_file_data
from osmosis_ai.atomic_file import write_atomic
from osmosis_ai.rollout.home import ENV_ARTIFACT_ROOT, osmosis_home
from osmosis_ai.rollout.identifiers import validate_rollout_id
from osmosis_ai.rollout.trajectory.atif import Trajectory, convert_sample_to_trajectory
from osmosis_ai.rollout.trajectory.encoding import dumps_trajectory
from osmosis_ai.rollout.trajectory.report import TrajectoryReport
from osmosis_ai.rollout.trajectory.retention import (
    DIAGNOSTICS_FILE,
    ENV_MAX_AGE_SEC,
    ENV_MAX_ROLLOUTS,
    TRAJECTORY_FILE,
    FolderIndex,
    RetentionPolicy,
    prune_rollout_dirs,
)
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionResult

logger = logging.getLogger(__name__)

__all__ = [
    "DIAGNOSTICS_FILE",
    "ENV_MAX_AGE_SEC",
    "ENV_MAX_ROLLOUTS",
    "TRAJECTORY_FILE",
    "RetentionPolicy",
    "configure_retention",
    "dumps_trajectory",
    "prune_rollout_dirs",
    "queue_trajectory",
    "save_trajectory",
    "trajectories_written",
]


class _Writer:
    """Process-wide state: the I/O thread and the pruning schedule.

    One daemon thread drains a queue of save jobs in batches and resolves each batch's futures
    with a single wake-up of the event loop, so a burst of finishing rollouts costs one thread
    hand-off instead of one each.
    """

    def __init__(self) -> None:
        self.policy: RetentionPolicy | None = None
        self._queue: queue.SimpleQueue[
            tuple[asyncio.AbstractEventLoop | None, asyncio.Future[Any] | None, Callable[[], Any]]
        ] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._writes_since_prune = 0
        self._last_prune = 0.0
        self._indexes: dict[Path, FolderIndex] = {}

    def submit(self, job: Callable[[], Any]) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._ensure_thread()
        self._queue.put((loop, future, job))
        return future

    def backlog(self) -> int:
        """Jobs queued and not yet taken by the thread (approximate)."""
        return self._queue.qsize()

    def post(self, job: Callable[[], Any]) -> None:
        """Queue ``job`` without waiting for it: no future, no wake-up of the event loop (the
        job reports its own failures). Jobs run in order, so a later :meth:`submit` completes
        after every job posted before it."""
        self._ensure_thread()
        self._queue.put((None, None, job))

    def _ensure_thread(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._work, name="osmosis-trajectory", daemon=True
                    )
                    self._thread.start()

    def _work(self) -> None:
        while True:
            batch = [self._queue.get()]
            with contextlib.suppress(queue.Empty):
                while len(batch) < 256:
                    batch.append(self._queue.get_nowait())
            finished: dict[
                asyncio.AbstractEventLoop,
                list[tuple[asyncio.Future[Any], Any, BaseException | None]],
            ] = {}
            for loop, future, job in batch:
                if future is None or loop is None:
                    job()  # a posted job: it never raises (see queue_trajectory)
                    continue
                try:
                    outcome: tuple[asyncio.Future[Any], Any, BaseException | None] = (
                        future,
                        job(),
                        None,
                    )
                except BaseException as exc:  # delivered to the awaiting coroutine
                    outcome = (future, None, exc)
                finished.setdefault(loop, []).append(outcome)
            for loop, outcomes in finished.items():
                with contextlib.suppress(RuntimeError):  # that loop has closed meanwhile
                    loop.call_soon_threadsafe(_resolve, outcomes)

    def after_fork(self) -> None:
        self._queue = queue.SimpleQueue()
        self._thread = None
        self._lock = threading.Lock()
        self._indexes = {}

    def retention(self) -> RetentionPolicy:
        if self.policy is None:
            self.policy = RetentionPolicy.from_env()
        return self.policy

    def written(self, root: Path, folder: str) -> None:
        """Record a write into ``folder`` under ``root`` and apply the bounds (writer thread)."""
        policy = self.retention()
        if not policy.max_rollouts and not policy.max_age_sec:
            return
        with self._lock:
            self._writes_since_prune += 1
            index = self._indexes.get(root)
            rescan = index is None or (
                self._writes_since_prune >= policy.prune_every
                and time.monotonic() - self._last_prune >= policy.prune_interval_sec
            )
            if rescan:
                self._writes_since_prune = 0
                self._last_prune = time.monotonic()
        if index is None or rescan:
            index = self._indexes[root] = FolderIndex(root)
        removed = index.add(folder, policy)
        if removed:
            logger.log(
                logging.INFO if rescan else logging.DEBUG,
                "pruned %d old rollout folder(s) under %s",
                removed,
                root,
            )


def _resolve(outcomes: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    for future, value, error in outcomes:
        if future.done():  # the awaiting coroutine was cancelled
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)


_WRITER = _Writer()
os.register_at_fork(after_in_child=lambda: _WRITER.after_fork())


def configure_retention(
    *,
    max_rollouts: int | None = None,
    max_age_sec: float | None = None,
    prune_every: int | None = None,
    prune_interval_sec: float | None = None,
) -> RetentionPolicy:
    """Change the retention bounds for this process (unspecified values keep their setting)."""
    policy = _WRITER.retention()
    for name, value in (
        ("max_rollouts", max_rollouts),
        ("max_age_sec", max_age_sec),
        ("prune_every", prune_every),
        ("prune_interval_sec", prune_interval_sec),
    ):
        if value is not None:
            if value < 0:
                raise ValueError(f"{name} must be >= 0 (0 disables that bound)")
            setattr(policy, name, value)
    with _WRITER._lock:
        _WRITER._last_prune = 0.0
        _WRITER._writes_since_prune = 0
        _WRITER._indexes = {}  # rebuilt, and the new bounds applied, on the next write
    return policy


def _write_atomic(folder: str, name: str, text: str) -> str:
    """Write ``folder/name`` via a temporary file and a rename (plain ``os`` calls: this runs
    once per rollout, and ``pathlib``/text-mode ``open`` cost several times the syscalls)."""
    try:
        os.mkdir(folder)
    except FileExistsError:
        pass
    except FileNotFoundError:
        os.makedirs(folder, exist_ok=True)
    final = os.path.join(folder, name)
    # No credential of this process (the judge's key in a traceback, a key the upstream
    # echoed) reaches a trajectory or its diagnostics (write_atomic adds a folder's own).
    write_atomic(final, redact_file_data(process_redactor(), text))
    return final


def _save_sync(
    *,
    rollout_id: str,
    result: ExecutionResult,
    request_label: str | None,
    request_metadata: Mapping[str, Any] | None,
    request_extra_fields: Mapping[str, Any] | None,
    report: TrajectoryReport | None,
    root: Path,
    prune: bool,
    diagnostics: Mapping[str, Any] | None,
) -> Path | None:
    folder = os.path.join(os.path.expanduser(root), validate_rollout_id(rollout_id))
    written: Path | None = None
    if diagnostics:
        _write_atomic(
            folder,
            DIAGNOSTICS_FILE,
            json.dumps(dict(diagnostics), indent=2, ensure_ascii=False, default=str),
        )
    sample = result.sample
    document: Trajectory | None = None
    if sample is not None:
        document = convert_sample_to_trajectory(
            sample,
            rollout_id=rollout_id,
            request_label=request_label,
            request_metadata=request_metadata,
            request_extra_fields=request_extra_fields,
            report=report,
            status=str(result.status),
            err_category=str(result.err_category) if result.err_category else None,
            err_message=result.err_message,
        )
    if document is not None:
        written = Path(_write_atomic(folder, TRAJECTORY_FILE, dumps_trajectory(document)))
    if prune and (written is not None or diagnostics):
        _WRITER.written(root.expanduser(), folder)
    return written


async def save_trajectory(
    *,
    rollout_id: str,
    result: ExecutionResult | ExecutionOutcome,
    request_label: str | None = None,
    request_metadata: Mapping[str, Any] | None = None,
    request_extra_fields: Mapping[str, Any] | None = None,
    report: TrajectoryReport | None = None,
    artifact_root: Path | str | None = None,
    diagnostics: Mapping[str, Any] | None = None,
) -> Path | None:
    """Write the rollout's ATIF trajectory; return its path, or ``None`` if nothing was written.

    ``result`` is the result to archive (pass an :class:`ExecutionOutcome` to use its
    ``result_to_save``). Nothing is written when it has no sample or the sample's
    ``trajectory_messages`` is ``None``; ``diagnostics`` (``ExecutionResult.extra_fields``) go
    to ``diagnostics.json`` even without a sample. Never raises (except on cancellation).
    """
    try:
        job = _save_job(
            rollout_id,
            result,
            request_label,
            request_metadata,
            request_extra_fields,
            report,
            artifact_root,
            diagnostics,
        )
        return None if job is None else await _WRITER.submit(job)
    except asyncio.CancelledError:
        raise
    except Exception:
        logger.warning("could not save the trajectory of rollout %r", rollout_id, exc_info=True)
        return None


class _RequestFields(Protocol):
    """What :func:`queue_trajectory` reads from the admission request."""

    label: str | None
    metadata: dict[str, Any] | None
    extra_fields: dict[str, Any] | None


def queue_trajectory(
    rollout_id: str,
    result: ExecutionResult,
    request: _RequestFields,
    report: TrajectoryReport | None = None,
) -> None:
    """:func:`save_trajectory` of ``result`` (its ``extra_fields`` as the diagnostics) without
    waiting for it: the rollout server's per-rollout path (no task, no future, no event-loop
    wake-up when the file is written). Never raises; a failure is logged.
    :func:`trajectories_written` waits for everything queued so far."""
    try:
        job = _save_job(
            rollout_id,
            result,
            request.label,
            request.metadata,
            request.extra_fields,
            report,
            None,
            result.extra_fields,
            logged=True,
        )
    except Exception:
        logger.warning("could not save the trajectory of rollout %r", rollout_id, exc_info=True)
        return
    if job is not None:
        _WRITER.post(job)


def _save_logged(**arguments: Any) -> None:
    """:func:`_save_sync` for a posted job: a failure is logged, never raised."""
    try:
        _save_sync(**arguments)
    except Exception:
        rollout_id = arguments.get("rollout_id")
        logger.warning("could not save the trajectory of rollout %r", rollout_id, exc_info=True)


#: Trajectories queued and not yet written above which a finishing rollout waits for the writer
#: (its slot stays taken, so admission feels it): backpressure, not a queue that grows while
#: rollouts finish faster than files are written.
MAX_QUEUED_TRAJECTORIES = 1024


async def trajectory_room(limit: int | None = None) -> None:
    """Return once fewer than ``limit`` (:data:`MAX_QUEUED_TRAJECTORIES`) trajectories wait to
    be written; at once when they do not."""
    bound = MAX_QUEUED_TRAJECTORIES if limit is None else limit
    if _WRITER.backlog() >= bound:
        await trajectories_written()


async def trajectories_written() -> None:
    """Wait until every trajectory queued by :func:`queue_trajectory` so far is written."""
    await _WRITER.submit(lambda: None)


def _save_job(
    rollout_id: str,
    result: ExecutionResult | ExecutionOutcome,
    request_label: str | None,
    request_metadata: Mapping[str, Any] | None,
    request_extra_fields: Mapping[str, Any] | None,
    report: TrajectoryReport | None,
    artifact_root: Path | str | None,
    diagnostics: Mapping[str, Any] | None,
    *,
    logged: bool = False,
) -> Callable[[], Path | None] | None:
    """The writer-thread job that saves one trajectory, or ``None`` when there is nothing to
    write. ``logged``: the job logs a failure instead of raising it (a posted job).

    A ``functools.partial`` (it and its keyword dict are what the garbage collector visits while
    the job waits in the queue) rather than a closure (a function, its closure tuple and a cell per variable): on a
    busy server hundreds of jobs can be waiting, and every full collection visits them."""
    if isinstance(result, ExecutionOutcome):
        result = result.result_to_save
    if result.sample is None and not diagnostics:
        return None
    if artifact_root is not None:
        root, prune = Path(artifact_root), False
    else:
        root, prune = osmosis_home(), not os.environ.get(ENV_ARTIFACT_ROOT)
    return functools.partial(
        _save_logged if logged else _save_sync,
        rollout_id=rollout_id,
        result=result,
        request_label=request_label,
        request_metadata=request_metadata,
        request_extra_fields=request_extra_fields,
        report=report,
        root=root,
        prune=prune,
        diagnostics=diagnostics,
    )
