"""The agent process as a worker pool of one (:mod:`..protocol_process`).

In the protocol process, :class:`AgentProcessPool` runs every rollout in the process
``serve()`` was called in, over the channel made before the fork: the pool's dispatch,
concurrency cap, queue, progress and cancellation as for worker processes, but its one worker
is never restarted, pinged or killed (it is the caller's own process). When it is gone
unasked, the protocol process exits at once, as the one process would have died with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import socket
from typing import Any

from osmosis_ai.rollout.server._impl.workers.pool import WorkerPool
from osmosis_ai.rollout.server._impl.workers.process import (
    WorkerDied,
    WorkerProcess,
    WorkerStartError,
)
from osmosis_ai.rollout.server._impl.workers.zygote import flush_stdio

logger = logging.getLogger("osmosis_ai.rollout.server")

#: How long the protocol process waits, after asking the agent process to stop, for it to
#: close the channel (its rollouts cancelled, the backend shut down) before exiting anyway.
STOP_WAIT_SEC = 30.0


class _AgentHandle:
    """The agent process as a process handle: its end of the channel closing is its exit."""

    start = "main"

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def poll(self) -> int | None:
        return 0 if self.closed.done() else None

    def kill(self) -> None:
        """Nothing: a busy or late agent process is the caller's own, and stays."""

    async def wait(self) -> int | None:
        await asyncio.shield(self.closed)
        return None

    def close(self) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


class AttachedWorker(WorkerProcess):
    """The agent process, over the channel made before the fork."""

    def __init__(self, pool: AgentProcessPool, index: int, spec: dict[str, Any]) -> None:
        super().__init__(index, spec, pool._on_exit)
        self.channel = pool.channel
        self.handle = _AgentHandle(pool.agent_pid)
        self.released = pool._wake
        self.intake = pool._intake

    #: The caller's lifespan runs before ``ready``: it takes as long as it takes, as in one
    #: process.
    ready_timeout_sec = None

    async def start(self) -> None:
        self.proc, self.pid = self.handle, self.handle.pid  # type: ignore[assignment]
        await self._handshake(self.channel)

    async def _not_ready(self, error: str | None) -> WorkerStartError:
        self.handle.close()  # never killed: the caller's process reports its own failure
        if error is not None:
            return WorkerStartError(f"the rollouts' process could not start: {error}")
        return WorkerStartError(
            f"the agent process (pid {self.pid}) closed the channel before it was ready; "
            "see its output above"
        )

    async def _died(self) -> None:
        self.ready = False
        self.handle.close()
        if not self.stopping:
            # The caller's process is gone (``kill -9``, a crash; the kernel's parent-death
            # signal is on its way): stop now, as one process would have, writing nothing more.
            # Failing the rollouts here would journal results for work that was lost in a
            # crash; the journal recovers them at the next start, as after any crash.
            logger.error(
                "the process running the rollouts (pid %s, the one serve() was called in) "
                "exited; the protocol process stops with it",
                self.pid,
            )
            _exit_now()
        pending, self.pending = self.pending, {}
        self.load = 0
        for future, _progress in pending.values():
            if not future.done():
                future.set_exception(WorkerDied("the rollouts' process stopped (shutting down)"))
        if self._writer is not None:
            self._writer.close()
        self.on_exit(self)


def _exit_now() -> None:
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(Exception):
            handler.flush()
    flush_stdio()
    os._exit(1)


class AgentProcessPool(WorkerPool):
    """A pool of one: the agent process, attached over ``channel``."""

    def __init__(self, template: Any, channel: socket.socket, agent_pid: int) -> None:
        super().__init__(template, 1, {}, hang_timeout_sec=math.inf)
        self.channel = channel
        self.agent_pid = agent_pid

    def _new_worker(self, index: int, spec: dict[str, Any]) -> WorkerProcess:
        return AttachedWorker(self, index, spec)

    def _on_exit(self, worker: WorkerProcess) -> None:
        self._wake()  # only while stopping: an unexpected exit ends this process (_died)

    async def _heartbeat(self) -> None:
        """Nothing: the agent process is never replaced, so a busy loop is only waited for."""

    stop_wait_sec = STOP_WAIT_SEC

    async def _release(self) -> None:
        """Nothing: the backend ran in the agent process and shuts down there, after its
        rollouts (and there is no zygote)."""

    def health(self) -> dict[str, Any]:
        template = self.template.health()
        return {
            "status": "ok" if any(w.ready for w in self.workers) else "degraded",
            "backend": template.get("backend", type(self.template).__name__),
            "in_flight": sum(w.load for w in self.workers),
            "queued": len(self._waiters),
            "max_queue_depth": self.max_queue_depth,
            "accepting": not self._closing,
            "protocol": {"mode": "process", "pid": os.getpid(), "agent_pid": self.agent_pid},
        }
