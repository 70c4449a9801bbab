"""``WorkerPool``: an :class:`ExecutionBackend` that runs each rollout in a worker process.

* **Dispatch.** ``execute`` sends the request to the worker with the fewest rollouts in flight.
  A per-worker cap comes from the template backend's ``max_concurrency`` (LocalBackend's
  ``max_concurrency`` / ``workflow_config.concurrency.max_concurrent``): each worker runs at most
  that many, the rest wait here in FIFO order (status ``queued``), and ``max_queue_depth`` bounds
  that one queue, so 429 means the same across all workers as in one process.
* **Same contract.** The worker's backend enters the :class:`RolloutContext` and reports
  ``running``/``grading``, forwarded to the server's progress object. Cancelling ``execute``
  cancels a queued rollout here or a running one in its worker. Time spent queued here is
  taken off ``agent_timeout_sec``.
* **Crashes.** A worker that dies (SIGKILL, segfault, OOM) fails each of its rollouts with
  ``internal_error`` and a message naming the worker, its pid and how it died; it is restarted
  (with a back-off if it keeps dying at start) and the other workers are unaffected.
* **Hangs.** Workers answer a heartbeat; one silent for ``hang_timeout_sec`` is killed and
  replaced. A rollout whose deadline passed ``deadline_grace_sec`` ago without its worker
  reporting a result fails with ``timeout`` here, and its worker must answer a ping within
  ``deadline_grace_sec`` or is replaced too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections import deque
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout._execution import failure, seconds
from osmosis_ai.rollout.backend.base import ExecutionBackend
from osmosis_ai.rollout.server._impl.workers.process import ResultIntake, WorkerDied, WorkerProcess
from osmosis_ai.rollout.server._impl.workers.spawn import Launcher, Zygote
from osmosis_ai.rollout.types.enums import RolloutErrorCategory
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest

if TYPE_CHECKING:
    from osmosis_ai.rollout.context import RolloutProgress

logger = logging.getLogger("osmosis_ai.rollout.server")

DEFAULT_HANG_TIMEOUT_SEC = 60.0
DEFAULT_DEADLINE_GRACE_SEC = 5.0
_TIMEOUT = RolloutErrorCategory.TIMEOUT
_INTERNAL = RolloutErrorCategory.INTERNAL_ERROR


class WorkerPool(ExecutionBackend):
    """Runs rollouts in ``workers`` processes that each rebuild ``template`` from ``entry``."""

    def __init__(
        self,
        template: ExecutionBackend,
        workers: int,
        entry: dict[str, str],
        *,
        hang_timeout_sec: float = DEFAULT_HANG_TIMEOUT_SEC,
        deadline_grace_sec: float = DEFAULT_DEADLINE_GRACE_SEC,
    ) -> None:
        self.template = template
        self.size = workers
        self.entry = entry
        self.hang_timeout_sec = hang_timeout_sec
        self.deadline_grace_sec = deadline_grace_sec
        cap = getattr(template, "max_concurrency", None)
        self.per_worker: int | None = cap if isinstance(cap, int) and cap > 0 else None
        depth = getattr(template, "max_queue_depth", None)
        self.max_queue_depth: int | None = depth if isinstance(depth, int) else None
        self.workers: list[WorkerProcess] = []
        self.restarts = 0
        self.start_sec = 0.0  # how long start_workers took (all workers ready)
        self.restart_secs: list[float] = []  # each restart: from the death to the new one ready
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closing = False
        self._pings = 0
        self._restarted: asyncio.Future[None] | None = None
        self._intake = ResultIntake()
        self.launcher = Launcher()
        #: The workers' niceness over this process's (``None``: the environment's, else 5).
        self.nice: int | None = None

    def fork_zygote(self) -> None:
        """Fork the zygote that will fork the workers (:mod:`.zygote`), if this process can
        fork safely now: before its event loop and any thread start. Else workers start by exec."""
        from osmosis_ai.rollout.server._impl.workers.zygote import start_zygote

        if self.launcher.zygote is None:
            started = start_zygote(self.template)
            if started is not None:
                self.launcher = Launcher(Zygote(*started))

    # -- lifecycle ----------------------------------------------------------------------------

    def _spec(self) -> dict[str, Any]:
        from osmosis_ai.rollout.server._impl.workers import worker_nice

        nice = self.nice
        return {
            "nice": worker_nice() if nice is None else nice,
            "entry": self.entry,
            "sys_path": list(sys.path),
            "log_level": logging.getLogger().getEffectiveLevel(),
        }

    async def start_workers(self) -> None:
        """Start every worker (the service calls this at startup); raise ``WorkerStartError`` if one cannot rebuild the backend."""
        spec = self._spec()
        began = asyncio.get_running_loop().time()
        self.workers = [self._new_worker(i, spec) for i in range(self.size)]
        results = await asyncio.gather(*(w.start() for w in self.workers), return_exceptions=True)
        self.start_sec = asyncio.get_running_loop().time() - began
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            self._closing = True
            for worker in self.workers:
                worker.kill()
            raise errors[0]
        logger.info(
            "rollout workers ready in %.2fs: %d process(es), started by %s, pids %s",
            self.start_sec,
            self.size,
            "/".join(sorted({str(w.start_mode) for w in self.workers})),
            ", ".join(str(w.pid) for w in self.workers),
        )
        self._spawn(self._heartbeat())

    def _new_worker(self, index: int, spec: dict[str, Any]) -> WorkerProcess:
        worker = WorkerProcess(index, spec, self._on_exit, self.launcher)
        worker.released = self._wake
        worker.intake = self._intake  # one pace for all workers' results
        return worker

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_exit(self, worker: WorkerProcess) -> None:
        self._wake()
        if not self._closing:
            self._spawn(self._restart(worker))

    async def _restart(self, dead: WorkerProcess) -> None:
        delay = 0.0
        began = asyncio.get_running_loop().time()
        while not self._closing:
            worker = self._new_worker(dead.index, dead.spec)
            try:
                await worker.start()
            except Exception as exc:
                delay = min(max(delay * 2, 1.0), 30.0)
                logger.error(
                    "restarting rollout worker %d failed (%s); retrying in %gs",
                    dead.index,
                    exc,
                    delay,
                )
                await asyncio.sleep(delay)
                continue
            if self._closing:
                await worker.stop(1.0)
                return
            self.workers[dead.index] = worker
            self.restarts += 1
            self.restart_secs.append(asyncio.get_running_loop().time() - began)
            logger.info(
                "rollout worker %d restarted by %s in %.2fs (pid %s)",
                dead.index,
                worker.start_mode,
                self.restart_secs[-1],
                worker.pid,
            )
            self._wake()
            if self._restarted is not None and not self._restarted.done():
                self._restarted.set_result(None)
            self._restarted = None
            return

    async def wait_for_restarts(self, count: int) -> None:
        """Return once ``count`` workers in total have been restarted (and are ready)."""
        while self.restarts < count:
            if self._restarted is None:
                self._restarted = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._restarted)

    async def _heartbeat(self) -> None:
        loop = asyncio.get_running_loop()
        interval = max(self.hang_timeout_sec / 4, 0.05)
        while not self._closing:
            await asyncio.sleep(interval)
            now = loop.time()
            for worker in list(self.workers):
                if not worker.ready:
                    continue
                if now - worker.last_pong > self.hang_timeout_sec:
                    worker.kill_as_hung(
                        f"stopped answering for {seconds(self.hang_timeout_sec)}s (its event "
                        "loop is blocked) and was killed"
                    )
                else:
                    self._pings += 1
                    worker.ping(self._pings)

    async def _check_hung(self, worker: WorkerProcess) -> None:
        """After a missed deadline: a worker that does not answer a ping in time is replaced."""
        loop = asyncio.get_running_loop()
        asked = loop.time()
        self._pings += 1
        worker.ping(self._pings)
        await asyncio.sleep(self.deadline_grace_sec)
        if worker.ready and worker.last_pong < asked:
            worker.kill_as_hung(
                "did not stop a rollout at its deadline nor answer a ping within "
                f"{seconds(self.deadline_grace_sec)}s (its event loop is blocked) and was killed"
            )

    #: How long each worker gets, once asked to stop, before it is killed.
    stop_wait_sec = 5.0

    async def shutdown(self) -> None:
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(
            *(w.stop(self.stop_wait_sec) for w in self.workers), return_exceptions=True
        )
        await self._release()

    async def _release(self) -> None:
        """After the workers stopped: the zygote, and the template backend's own shutdown."""
        await self.launcher.close()
        with contextlib.suppress(Exception):
            await self.template.shutdown()

    # -- dispatch -----------------------------------------------------------------------------

    def _pick(self) -> WorkerProcess | None:
        cap = self.per_worker
        best: WorkerProcess | None = None
        for worker in self.workers:
            if (
                worker.ready
                and (cap is None or worker.load < cap)
                and (best is None or worker.load < best.load)
            ):
                best = worker
        return best

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _take_free(self) -> WorkerProcess | None:
        """A free slot now, if nobody is queued ahead (no timer, no future: the common case)."""
        worker = None if self._waiters else self._pick()
        if worker is not None:
            worker.load += 1
        return worker

    async def _acquire(self) -> WorkerProcess:
        worker = self._take_free()
        if worker is not None:
            return worker
        while worker is None:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # pass the slot on
                else:
                    with contextlib.suppress(ValueError):
                        self._waiters.remove(waiter)
                raise
            worker = self._pick()
        worker.load += 1
        if self._waiters and self._pick() is not None:
            self._wake()
        return worker

    async def execute(
        self, request: ExecutionRequest, progress: RolloutProgress | None = None
    ) -> ExecutionOutcome:
        loop = asyncio.get_running_loop()
        admitted = loop.time()
        timeout = request.agent_timeout_sec
        worker = self._take_free()
        try:
            if worker is None:
                async with asyncio.timeout(timeout):
                    worker = await self._acquire()
        except TimeoutError:
            return ExecutionOutcome(
                failure(
                    _TIMEOUT,
                    f"workflow exceeded its {seconds(timeout or 0)}s deadline "
                    f"({loop.time() - admitted:.1f}s of it spent queued for a worker)",
                )
            )
        queued = loop.time() - admitted
        if timeout is not None and queued >= 0.01:
            request = request.model_copy(update={"agent_timeout_sec": timeout - queued})
        future = worker.submit(request, progress)
        guard = None
        if timeout is not None:
            guard = timeout - queued + (request.grader_timeout_sec or 0) + self.deadline_grace_sec
        try:
            # Awaited directly (cancelling this cancels only the future: the worker's result,
            # if it still comes, is dropped by ``WorkerProcess._done``), and a timer only for a
            # deadline: each rollout in flight keeps a dozen fewer objects for full GCs to visit.
            if guard is None:
                outcome = await future
            else:
                async with asyncio.timeout(guard):
                    outcome = await future
        except asyncio.CancelledError:
            worker.cancel(request.id)
            raise
        except TimeoutError:
            worker.cancel(request.id)
            self._spawn(self._check_hung(worker))
            return ExecutionOutcome(
                failure(
                    _TIMEOUT,
                    f"workflow exceeded its {seconds(timeout or 0)}s deadline and its worker "
                    f"process (pid {worker.pid}) did not stop it within "
                    f"{seconds(self.deadline_grace_sec)}s (blocking code on its event loop?)",
                )
            )
        except WorkerDied as exc:
            return ExecutionOutcome(workflow=failure(_INTERNAL, exc.message))
        if outcome is None:  # the worker cancelled it without being asked (shutting down)
            return ExecutionOutcome(workflow=failure(_INTERNAL, "the rollout worker was stopped"))
        return outcome

    # -- capacity and health ------------------------------------------------------------------

    def has_capacity(self) -> bool:
        return self.has_capacity_for(0)

    def has_capacity_for(self, pending: int) -> bool:
        """One more fits a free worker slot or the queue, counting the ``pending`` admitted
        rollouts that have not reached :meth:`execute` yet."""
        depth = self.max_queue_depth
        cap = self.per_worker
        if depth is None or cap is None:
            return True
        room = cap * sum(1 for w in self.workers if w.ready)
        load = sum(w.load for w in self.workers)
        return load + len(self._waiters) + pending + 1 - room <= depth

    def health(self) -> dict[str, Any]:
        return {
            "status": "ok" if any(w.ready for w in self.workers) else "degraded",
            "backend": "workers",
            "inner_backend": type(self.template).__name__,
            "workers": [
                {
                    "index": w.index,
                    "pid": w.pid,
                    "ready": w.ready,
                    "in_flight": w.load,
                    "start": w.start_mode,
                }
                for w in self.workers
            ],
            **self.launcher.describe(),
            "queued": len(self._waiters),
            "per_worker_concurrency": self.per_worker,
            "max_queue_depth": self.max_queue_depth,
            "restarts": self.restarts,
        }


def use_workers(app: Any, workers: int) -> WorkerPool:
    """Make ``app`` (from ``create_rollout_server``) run its rollouts in ``workers`` processes."""
    from osmosis_ai.rollout.server._impl.workers import WorkerSetupError
    from osmosis_ai.rollout.server._impl.workers.entry import locate

    service = getattr(getattr(app, "state", None), "rollout_service", None)
    if service is None:
        raise WorkerSetupError(
            f"workers= needs the app returned by create_rollout_server(); got {type(app).__name__}"
        )
    backend = service.backend
    if isinstance(backend, WorkerPool):
        return backend
    pool = WorkerPool(backend, workers, locate(app))
    pool.nice = service.settings.worker_nice
    service.use_backend(pool)
    pool.fork_zygote()
    return pool
