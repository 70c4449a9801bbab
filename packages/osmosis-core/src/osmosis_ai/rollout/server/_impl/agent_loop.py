"""The agent loop: where rollouts run when the protocol has a thread of its own.

``serve(app)`` in one process runs two event loops. The **protocol loop**, in a thread of its
own, runs uvicorn and the whole :class:`~.service.RolloutService`: admission, leases, long polls,
results, the outbox, callbacks, drain. The **agent loop** is the main thread's: the caller's
``lifespan``, ``backend.execute`` (every workflow and grader) and ``backend.shutdown`` run there,
as they did when both were one loop, so rollout code keeps the main thread (signal-based
timeouts such as ``signal.alarm`` work) and the loop its lifespan built its clients on.

Hundreds of agents stepping, or a workflow that holds its loop with CPU work, then delay only
other agent work: the protocol loop still reads each request when it arrives and answers it.
The two loops share the interpreter's lock, so a CPU-bound agent loop costs a request at most a
few switch intervals (``sys.getswitchinterval()``, 5 ms), not a turn of the agent loop.

:class:`AgentLoop` is the one crossing: :meth:`AgentLoop.run` awaits a coroutine on the agent
loop as if it were awaited here (a result, an exception, or a cancellation passed on and then
waited for, so a cancelled rollout has unwound before the service reports it). Progress reported
by the backend crosses with :class:`RelayedProgress`. Everything else stays on the protocol loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.context import RolloutProgress
from osmosis_ai.rollout.server._impl import compat
from osmosis_ai.rollout.server._impl.entry import publish
from osmosis_ai.rollout.types.enums import RolloutStatus

if TYPE_CHECKING:
    from osmosis_ai.rollout.backend.base import ExecutionBackend
    from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest

    Execute = Callable[[ExecutionRequest, RolloutProgress], Awaitable[ExecutionOutcome]]

__all__ = ["AgentLoop", "RelayedProgress", "entered_on", "executor", "shutdown_backend"]

logger = logging.getLogger("osmosis_ai.rollout.server")


class AgentLoop:
    """Runs coroutines on ``loop`` (another thread's) for callers on the protocol loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        # Each counter is written by one thread only (no lost updates): handed over by the
        # protocol thread, started by the agent thread.
        self.posted = 0
        self.started = 0

    @property
    def pending(self) -> int:
        """Coroutines handed over that the agent loop has not started yet (it is busy): the
        capacity check counts them as admitted rollouts the backend cannot see yet."""
        return self.posted - self.started

    async def run[T](self, make: Callable[[], Awaitable[T]]) -> T:
        """``await make()`` on the agent loop; ``make`` is called there.

        Cancelling the caller cancels the agent-side task, and the caller then waits for it to
        finish, as a directly awaited coroutine would: it raises ``CancelledError`` if the task
        stopped for the cancellation, or returns what the task returned if it swallowed it."""
        here = asyncio.get_running_loop()
        job: _Job[T] = _Job(make, here)
        self.posted += 1
        self.loop.call_soon_threadsafe(self._start, job)
        done = job.done
        while True:
            try:
                return await asyncio.shield(done)
            except asyncio.CancelledError:
                if done.done():
                    raise  # the agent side stopped for it (or the caller was cancelled as it ended)
                with contextlib.suppress(RuntimeError):  # the agent loop has closed
                    self.loop.call_soon_threadsafe(job.cancel)

    def _start(self, job: _Job[Any]) -> None:
        """Agent thread: start ``job`` as a task of the agent loop."""
        self.started += 1
        if job.cancelled:
            job.settle(None)
            return
        try:
            task = self.loop.create_task(job.make())  # type: ignore[arg-type]
        except BaseException as exc:
            job.fail(exc)
            return
        job.task = task
        task.add_done_callback(job.settle)


class _Job[T]:
    """One coroutine run on the agent loop for a caller on another loop."""

    __slots__ = ("cancelled", "done", "home", "make", "task")

    def __init__(self, make: Callable[[], Awaitable[T]], home: asyncio.AbstractEventLoop) -> None:
        self.make = make
        self.home = home
        self.done: asyncio.Future[T] = home.create_future()
        self.task: asyncio.Task[T] | None = None
        self.cancelled = False

    def cancel(self) -> None:
        """Agent thread: cancel the task (or, not started yet, never start it)."""
        self.cancelled = True
        if self.task is not None:
            self.task.cancel()

    def settle(self, task: asyncio.Task[T] | None) -> None:
        """Agent thread: hand the finished task's outcome to the caller's loop."""
        self._post(_copy_outcome, task)

    def fail(self, exc: BaseException) -> None:
        self._post(_set_exception, exc)

    def _post(self, callback: Callable[..., None], arg: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the caller's loop has closed: nobody waits
            self.home.call_soon_threadsafe(callback, self.done, arg)


def _copy_outcome(done: asyncio.Future[Any], task: asyncio.Task[Any] | None) -> None:
    """Caller's thread: ``done`` takes the finished ``task``'s outcome (``None``: never ran)."""
    if done.done():
        return
    if task is None or task.cancelled():
        done.cancel()
        return
    exc = task.exception()
    if exc is not None:
        done.set_exception(exc)
    else:
        done.set_result(task.result())


def _set_exception(done: asyncio.Future[Any], exc: BaseException) -> None:
    if not done.done():
        done.set_exception(exc)


class RelayedProgress(RolloutProgress):
    """The progress object a backend on the agent loop reports to: each change is applied here
    (for waiters on the agent loop) and to the server's progress object on the protocol loop,
    where the long polls wait."""

    def __init__(self, target: RolloutProgress, home: asyncio.AbstractEventLoop) -> None:
        super().__init__(status=target.status)
        self._target = target
        self._home = home

    async def set_status(self, status: RolloutStatus) -> None:
        if status == self.status or self.status.is_terminal:
            return
        with contextlib.suppress(RuntimeError):  # the protocol loop has closed
            self._home.call_soon_threadsafe(publish, self._target, status)
        await super().set_status(status)


def executor(backend: ExecutionBackend, agent: AgentLoop | None) -> Execute:
    """How the service runs one rollout on ``backend``: awaited in place, or on the agent loop
    (with a :class:`RelayedProgress`) when the protocol has a loop of its own."""
    if compat.legacy_backend(backend):

        def call(request: ExecutionRequest, progress: RolloutProgress) -> Any:
            return compat.execute_legacy(backend, request, progress)

    else:
        call = backend.execute
    if agent is None:
        return call

    async def relayed(request: ExecutionRequest, progress: RolloutProgress) -> ExecutionOutcome:
        relay = RelayedProgress(progress, asyncio.get_running_loop())
        return await agent.run(lambda: call(request, relay))

    return relayed


async def shutdown_backend(
    backend: ExecutionBackend, agent: AgentLoop | None, limit: float
) -> None:
    """``backend.shutdown()``, on the agent loop when there is one (at most ``limit`` seconds
    there: a loop some workflow keeps blocked must not hold the server's exit)."""
    try:
        if agent is None:
            await backend.shutdown()
        else:
            async with asyncio.timeout(limit):
                await agent.run(backend.shutdown)
    except TimeoutError:
        logger.error("backend.shutdown() did not finish within %gs on the agent loop", limit)
    except Exception:
        logger.exception("backend.shutdown() raised")


def entered_on(
    agent: AgentLoop | None, manager: AbstractAsyncContextManager[Any]
) -> AbstractAsyncContextManager[Any]:
    """``manager`` (the caller's lifespan), entered and exited on the agent loop if there is one:
    what it builds (clients, pools, loop-bound locks) belongs to the loop the rollouts run on."""
    if agent is None:
        return manager
    return _EnteredOn(agent, manager)


class _EnteredOn(AbstractAsyncContextManager[Any]):
    def __init__(self, agent: AgentLoop, manager: AbstractAsyncContextManager[Any]) -> None:
        self._agent = agent
        self._manager = manager

    async def __aenter__(self) -> Any:
        return await self._agent.run(self._manager.__aenter__)

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        return await self._agent.run(lambda: self._manager.__aexit__(*exc_info))
