"""A worker process: ``python -m osmosis_ai.rollout.server._impl.workers.main FD SPEC_JSON``, or
forked from the zygote (:func:`run_forked`, :mod:`.zygote`).

Started by exec, it rebuilds the backend from the entrypoint once
(:func:`.entry.rebuild_backend`); forked, it already holds it. It reports ``ready`` with how it
was started (``exec`` or ``fork``), or ``error`` with what went wrong, then runs every ``run`` message as a task on its
own event loop: ``backend.execute(request, progress)``, where ``progress`` forwards ``running`` /
``grading`` to the server. ``cancel`` cancels that task. The worker exits when the server's end
of the socket closes, so a dead server never leaves workers behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import sys
from contextlib import AbstractAsyncContextManager
from typing import Any

from osmosis_ai.rollout.backend.base import accepts_progress, execute_legacy
from osmosis_ai.rollout.server._impl.heap import freeze_long_lived
from osmosis_ai.rollout.server._impl.ownership import enabled as ownership_enabled
from osmosis_ai.rollout.server._impl.workers import ENV_WORKER
from osmosis_ai.rollout.server._impl.workers.channel import Sender, encode, encode_outcome, receive

logger = logging.getLogger("osmosis_ai.rollout.server.worker")


class _Worker:
    def __init__(self, backend: Any, writer: asyncio.StreamWriter) -> None:
        self.backend = backend
        self.writer = writer
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.legacy = not accepts_progress(backend)  # a 0.3.8 ``execute(request)``
        # Ownership telemetry (the server's, same environment) records every status: keep them.
        self.sender = Sender(writer, _unpicklable, keep_status=ownership_enabled(os.environ))

    def send(self, message: tuple[Any, ...]) -> None:
        self.sender.send(message)

    def run(self, rollout_id: str, request: Any) -> None:
        task = asyncio.get_running_loop().create_task(self._execute(rollout_id, request))
        self.tasks[rollout_id] = task

    async def _execute(self, rollout_id: str, request: Any) -> None:
        from osmosis_ai.rollout.context import RolloutProgress

        def report(status: Any) -> None:
            self.send(("status", rollout_id, str(status)))

        outcome: Any = None
        progress = RolloutProgress(on_status=report)
        try:
            if self.legacy:
                outcome = await execute_legacy(self.backend, request, progress)
            else:
                outcome = await self.backend.execute(request, progress)
        except asyncio.CancelledError:
            outcome = None
        except Exception as exc:
            outcome = _failure(f"backend.execute raised in the worker process: {exc!r}")
        finally:
            self.tasks.pop(rollout_id, None)
        self.send(("done", rollout_id, _encoded(outcome)))


def _encoded(outcome: Any) -> bytes | None:
    """``outcome`` pickled for the server; one that does not pickle becomes a failure saying why."""
    if outcome is None:
        return None
    try:
        return encode_outcome(outcome)
    except Exception as exc:
        return encode_outcome(_failure(f"the worker could not send the result: {exc!r}"))


def _unpicklable(message: tuple[Any, ...], exc: Exception) -> tuple[Any, ...] | None:
    logger.error("a rollout worker message could not be sent: %r", exc)
    return None


def _failure(message: str) -> Any:
    from osmosis_ai.rollout._execution import failure
    from osmosis_ai.rollout.types.enums import RolloutErrorCategory
    from osmosis_ai.rollout.types.execution import ExecutionOutcome

    return ExecutionOutcome(workflow=failure(RolloutErrorCategory.INTERNAL_ERROR, message))


async def _serve(
    fd: int,
    spec: dict[str, Any],
    backend: Any = None,
    *,
    around: AbstractAsyncContextManager[Any] | None = None,
    start: str | None = None,
) -> None:
    """Serve the channel ``fd``: ``around`` (the caller's lifespan, in the agent process of
    :mod:`..protocol_process`) is entered before ``ready`` and exited after ``backend.shutdown``."""
    sock = socket.socket(fileno=fd)
    reader, writer = await asyncio.open_unix_connection(sock=sock)
    start = start or ("exec" if backend is None else "fork")
    async with contextlib.AsyncExitStack() as stack:
        try:
            if around is not None:
                await stack.enter_async_context(around)
        except BaseException as exc:
            writer.write(encode([("error", f"the lifespan raised {type(exc).__name__}: {exc}")]))
            await writer.drain()
            writer.close()
            raise
        await _serve_backend(reader, writer, spec, backend, start)


async def _serve_backend(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    spec: dict[str, Any],
    backend: Any,
    start: str,
) -> None:
    try:
        if backend is None:
            from osmosis_ai.rollout.server._impl.workers.entry import rebuild_backend

            backend = rebuild_backend(spec["entry"])
    except BaseException as exc:
        writer.write(encode([("error", f"{type(exc).__name__}: {exc}")]))
        await writer.drain()
        writer.close()
        return
    worker = _Worker(backend, writer)
    freeze_long_lived()  # the framework and backend stay: keep full GCs off them
    worker.send(("ready", os.getpid(), start))
    try:
        await _loop(worker, reader)
    finally:
        for task in list(worker.tasks.values()):
            task.cancel()
        if worker.tasks:
            await asyncio.wait(list(worker.tasks.values()), timeout=5)
        worker.sender.flush()
        try:
            await backend.shutdown()
        except Exception:
            logger.exception("backend.shutdown() raised in a worker process")
        writer.close()


async def _loop(worker: _Worker, reader: asyncio.StreamReader) -> None:
    while True:
        try:
            batch = await receive(reader)
        except (asyncio.IncompleteReadError, ConnectionError):
            return  # the server has gone
        for message in batch:
            kind = message[0]
            if kind == "run":
                worker.run(message[1], message[2])
            elif kind == "cancel":
                task = worker.tasks.get(message[1])
                if task is not None:
                    task.cancel()
            elif kind == "ping":
                worker.send(("pong", message[1]))
            elif kind == "stop":
                return


def _prepare(spec: dict[str, Any]) -> None:
    os.environ[ENV_WORKER] = "1"
    if spec.get("nice") and hasattr(os, "nice"):
        with contextlib.suppress(OSError):
            os.nice(spec["nice"])  # the protocol process comes first (see ENV_WORKER_NICE)
    logging.basicConfig(level=spec.get("log_level", logging.INFO))


def main(argv: list[str]) -> None:
    fd, spec = int(argv[0]), json.loads(argv[1])
    sys.path[:] = spec["sys_path"]
    _prepare(spec)
    asyncio.run(_serve(fd, spec))


def run_forked(fd: int, spec: dict[str, Any], backend: Any) -> None:
    """A worker forked from the zygote: ``backend`` is the one the server imported."""
    _prepare(spec)
    asyncio.run(_serve(fd, spec, backend))


if __name__ == "__main__":
    main(sys.argv[1:])
