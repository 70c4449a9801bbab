"""One worker process as the server sees it: spawn, dispatch, status, death and hang checks."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from collections.abc import Callable
from typing import Any

from osmosis_ai.errors import BackendError
from osmosis_ai.rollout._execution import failure
from osmosis_ai.rollout.server._impl.entry import publish
from osmosis_ai.rollout.server._impl.workers.channel import Sender, decode_outcome, receive
from osmosis_ai.rollout.server._impl.workers.spawn import ExecProcess, ForkedProcess, Launcher
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest

logger = logging.getLogger("osmosis_ai.rollout.server")

#: How long a worker may take to import the entrypoint and rebuild the backend.
READY_TIMEOUT_SEC = 300.0


class WorkerStartError(BackendError):
    """A worker process could not rebuild the backend (its message says why)."""


class WorkerDied(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "closed its channel"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        if name == "SIGKILL":
            return "was killed by SIGKILL (the kernel's out-of-memory killer, or `kill -9`)"
        if name == "SIGSEGV":
            return "crashed with SIGSEGV (a segmentation fault in native code)"
        return f"was killed by {name}"
    return f"exited with status {returncode}"


#: Finished rollouts handed to the service per event-loop turn, across all workers. Each one's
#: follow-up work (its finalisation, its long poll's answer, its trajectory) lands in the next
#: turns, and a ``POST /rollout`` spans about three turns (read, handled, journaled and
#: answered): 2 keeps those turns short even for an agent framework's results (several
#: messages each); 8 made Strands / OpenAI Agents admissions wait about twice as long.
RESULTS_PER_TURN = 2


class ResultIntake:
    """Hands finished rollouts to the service at most :data:`RESULTS_PER_TURN` per loop turn.

    A worker returns what finished in one of its loop turns as one frame, and at a high rate
    those frames hold hundreds of results. Handled at once, each result's follow-up work (its
    finalisation, the long poll it answers, its trajectory, the controller's next ``POST``)
    lands in the same few turns of the server's loop, and an admission arriving meanwhile waits
    behind all of it. Taken a few per turn, every turn stays short and a ``POST /rollout``
    waits for about one of them; the results wait instead (in the order they finished), which
    costs a poll that is already waiting a little latency and no throughput.
    """

    def __init__(self, per_turn: int = RESULTS_PER_TURN) -> None:
        self.per_turn = per_turn
        self._taken = 0

    async def turn(self) -> None:
        """Return once one more result fits this turn (waiting for the next turns if not)."""
        while self._taken >= self.per_turn:  # noqa: ASYNC110 - giving the loop turns is the point
            await asyncio.sleep(0)
        if not self._taken:
            asyncio.get_running_loop().call_soon(self._next_turn)
        self._taken += 1

    def _next_turn(self) -> None:
        self._taken = 0


class WorkerProcess:
    """A live worker: its rollouts in flight (``pending``) and their progress objects."""

    def __init__(
        self,
        index: int,
        spec: dict[str, Any],
        on_exit: Callable[[WorkerProcess], None],
        launcher: Launcher | None = None,
    ):
        self.index = index
        self.spec = spec
        self.on_exit = on_exit
        self.launcher = launcher or Launcher()
        self.proc: ExecProcess | ForkedProcess | None = None
        self.pid: int | None = None
        self.start_mode: str | None = None  # "fork" or "exec", as the worker reported it
        self.ready = False
        self.load = 0  # rollouts dispatched (or reserved) and not yet done
        self.pending: dict[str, tuple[asyncio.Future[ExecutionOutcome | None], Any]] = {}
        self.last_pong = 0.0
        self._writer: asyncio.StreamWriter | None = None
        self._sender: Sender | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._death: str | None = None
        self._death_reason: str | None = None
        self.stopping = False
        #: Called when a slot frees up (a rollout finished); the pool wakes a queued rollout.
        self.released: Callable[[], None] = lambda: None
        #: Paces finished rollouts into the service (the pool shares one among its workers).
        self.intake = ResultIntake()

    async def start(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            self.proc = await self.launcher.start(theirs, self.spec)
        finally:
            theirs.close()
        self.pid = self.proc.pid
        await self._handshake(ours)

    #: How long the process may take to report ``ready`` (``None``: as long as it takes).
    ready_timeout_sec: float | None = READY_TIMEOUT_SEC

    async def _handshake(self, channel: socket.socket) -> None:
        """Open ``channel``, wait for the process's ``ready`` and start reading its messages."""
        loop = asyncio.get_running_loop()
        reader, self._writer = await asyncio.open_unix_connection(sock=channel)
        self._sender = Sender(self._writer)
        try:
            async with asyncio.timeout(self.ready_timeout_sec):
                first = (await receive(reader))[0]
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError) as exc:
            raise await self._not_ready(None) from exc
        if first[0] != "ready":
            raise await self._not_ready(first[1])
        self.start_mode = first[2] if len(first) > 2 else None
        self.ready = True
        self.last_pong = loop.time()
        self._reader_task = loop.create_task(
            self._read(reader), name=f"osmosis-worker-{self.index}"
        )

    async def _not_ready(self, error: str | None) -> WorkerStartError:
        """The error for a process that closed its channel, or timed out (``error`` None), or
        reported ``error`` instead of ``ready``; the process is killed."""
        self.kill()
        if error is not None:
            return WorkerStartError(
                f"rollout worker {self.index} could not rebuild the backend: {error}"
            )
        code = await self.proc.wait() if self.proc is not None else None
        return WorkerStartError(
            f"rollout worker {self.index} (pid {self.pid}) {describe_exit(code)} before it "
            "was ready; see its output above"
        )

    def send(self, message: tuple[Any, ...]) -> None:
        if self._sender is not None:
            self._sender.send(message)

    def submit(
        self, request: ExecutionRequest, progress: Any
    ) -> asyncio.Future[ExecutionOutcome | None]:
        future: asyncio.Future[ExecutionOutcome | None] = asyncio.get_running_loop().create_future()
        if self._death is not None:
            future.set_exception(WorkerDied(self._death))
            return future
        self.pending[request.id] = (future, progress)
        self.send(("run", request.id, request))
        return future

    def cancel(self, rollout_id: str) -> None:
        if rollout_id in self.pending:
            self.send(("cancel", rollout_id))

    def ping(self, n: int) -> None:
        self.send(("ping", n))

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

    async def stop(self, timeout: float) -> None:  # noqa: ASYNC109
        self.stopping = True
        self.send(("stop",))
        if self.proc is None:
            return
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.kill()
        if self._reader_task is not None:
            await asyncio.wait([self._reader_task], timeout=timeout)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        loop = asyncio.get_running_loop()
        intake = self.intake
        try:
            while True:
                for message in await receive(reader):
                    kind = message[0]
                    if kind == "status":
                        item = self.pending.get(message[1])
                        if item is not None and item[1] is not None:
                            publish(item[1], RolloutStatus(message[2]))
                    elif kind == "done":
                        await intake.turn()
                        self._done(message[1], message[2])
                    elif kind == "pong":
                        self.last_pong = loop.time()
        except (asyncio.IncompleteReadError, ConnectionError, EOFError):
            pass
        except Exception:
            logger.exception("rollout worker %d sent an unreadable message", self.index)
            self.kill()
        await self._died()

    def _done(self, rollout_id: str, blob: bytes | None) -> None:
        item = self.pending.pop(rollout_id, None)
        self.load -= 1
        if item is not None and not item[0].done():
            item[0].set_result(self._outcome(rollout_id, blob))
        self.released()

    def _outcome(self, rollout_id: str, blob: bytes | None) -> ExecutionOutcome | None:
        if blob is None:
            return None
        try:
            return decode_outcome(blob)
        except Exception as exc:
            logger.warning("the result of rollout %s could not be read: %r", rollout_id, exc)
            return ExecutionOutcome(
                workflow=failure(
                    RolloutErrorCategory.INTERNAL_ERROR,
                    f"the server could not read the result the worker process sent ({exc!r}); "
                    "is it built from classes the server cannot import (defined in the script "
                    "run as __main__?)",
                )
            )

    async def _died(self) -> None:
        self.ready = False
        code = None
        if self.proc is not None:
            self.kill()  # the channel is gone: make sure the process is too
            code = await self.proc.wait()
        reason = self._death_reason or describe_exit(code)
        self._death = (
            f"the rollout worker process running this rollout (worker {self.index}, pid "
            f"{self.pid}) {reason}; the rollout was lost and the worker restarted"
        )
        if self.stopping:
            pass
        elif self.pending:
            logger.error(
                "rollout worker %d (pid %s) %s; failing its %d rollout(s) and restarting it",
                self.index,
                self.pid,
                reason,
                len(self.pending),
            )
        else:
            logger.warning(
                "rollout worker %d (pid %s) %s; restarting it", self.index, self.pid, reason
            )
        pending, self.pending = self.pending, {}
        self.load = 0
        for future, _progress in pending.values():
            if not future.done():
                future.set_exception(WorkerDied(self._death))
        if self._writer is not None:
            self._writer.close()
        self.on_exit(self)

    def kill_as_hung(self, reason: str) -> None:
        """Replace a worker that stopped answering (its rollouts fail with ``reason``)."""
        if self._death_reason is None:
            self._death_reason = reason
        self.kill()
