"""Serving an ASGI app with uvicorn: the one owner of ``uvicorn.Server`` in osmosis.

uvicorn is imported only when a function here is called (it comes with the ``server`` extra).

* :func:`uvicorn_config`: a ``uvicorn.Config`` on ``127.0.0.1`` (port 0: a free one), ``quiet``
  (warnings only, no access log) on request; other keywords go to ``uvicorn.Config``
  (keep-alive, a custom ``http`` protocol class, ``lifespan``...).
* :func:`uvicorn_server`: the ``uvicorn.Server`` for a config, with a ``ready`` event (set once it
  listens, usable from its own loop: ``ready``; from another thread: ``listening``), and the
  process's signal handlers captured (``capture_signals=True``, uvicorn's default: the app's own
  server) or left alone (an in-process helper such as the eval proxy or a test server).
  :func:`server_class` is its class, for subclasses (the rollout server's draining server).
* :func:`start` / :func:`stop`: serve in the running event loop; :func:`start` returns once
  the server listens (a start-up failure is raised). :class:`ThreadedServer`: serve from a
  daemon thread (sync callers). :func:`run`: serve in this thread until the server exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import threading
from collections.abc import Generator, Sequence
from typing import Any

__all__ = [
    "ThreadedServer",
    "run",
    "server_class",
    "start",
    "stop",
    "uvicorn_config",
    "uvicorn_server",
]


def uvicorn_config(
    app: Any, *, host: str = "127.0.0.1", port: int = 0, quiet: bool = False, **options: Any
) -> Any:
    """A ``uvicorn.Config`` for ``app``; ``quiet``: ``log_level="warning"``, no access log."""
    import uvicorn

    if quiet:
        options.setdefault("log_level", "warning")
        options.setdefault("access_log", False)
    return uvicorn.Config(app, host=host, port=port, **options)


@functools.cache
def server_class() -> type[Any]:
    """The ``uvicorn.Server`` subclass :func:`uvicorn_server` builds (``ready``/``listening``
    events, optional signal capture)."""
    import uvicorn

    class LoopbackServer(uvicorn.Server):
        def __init__(self, config: uvicorn.Config, *, capture_signals: bool = True) -> None:
            super().__init__(config)
            self._captures_signals = capture_signals
            self.ready = asyncio.Event()
            self.listening = threading.Event()

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                self.ready.set()
                self.listening.set()

        @contextlib.contextmanager
        def capture_signals(self) -> Generator[None]:
            if self._captures_signals:
                with super().capture_signals():
                    yield
            else:
                yield

        @property
        def port(self) -> int:
            """The first listening socket's port."""
            return int(self.servers[0].sockets[0].getsockname()[1])

    return LoopbackServer


def uvicorn_server(config: Any, *, capture_signals: bool = True) -> Any:
    """The server for ``config`` (see the module docs)."""
    return server_class()(config, capture_signals=capture_signals)


async def start(
    server: Any,
    *,
    sockets: Sequence[socket.socket] | None = None,
    start_timeout_sec: float | None = None,
) -> asyncio.Task[None]:
    """Serve ``server`` in the running loop; returns its task once it listens. A start-up
    failure is raised; ``start_timeout_sec`` bounds the wait (``RuntimeError``)."""
    timeout = start_timeout_sec
    task = asyncio.create_task(server.serve(sockets=list(sockets) if sockets else None))
    ready = asyncio.create_task(server.ready.wait())
    done, _ = await asyncio.wait({task, ready}, timeout=timeout, return_when="FIRST_COMPLETED")
    if ready in done:
        return task
    ready.cancel()
    server.should_exit = True
    await task  # re-raises the start-up failure
    if timeout is not None and task not in done:
        raise RuntimeError(f"uvicorn did not start within {timeout} s")
    raise RuntimeError("uvicorn exited during start-up")


async def stop(server: Any, task: asyncio.Task[None] | None) -> None:
    """Ask ``server`` to exit and wait for its task (its shutdown, lifespan included)."""
    server.should_exit = True
    if task is not None:
        await task


def run(server: Any, *, sockets: Sequence[socket.socket] | None = None) -> None:
    """Serve in this thread until the server exits (signals end it when it captures them)."""
    server.run(sockets=list(sockets) if sockets else None)


class ThreadedServer:
    """``server`` served from a daemon thread; :meth:`start` returns once it listens."""

    def __init__(self, server: Any, *, sockets: Sequence[socket.socket] | None = None) -> None:
        self.server = server
        self._sockets = list(sockets) if sockets else None
        self._thread = threading.Thread(target=self._run, name="osmosis-uvicorn", daemon=True)
        self._failure: BaseException | None = None

    def _run(self) -> None:
        try:
            self.server.run(sockets=self._sockets)
        except BaseException as exc:  # reported by start()
            self._failure = exc
        finally:
            self.server.listening.set()  # wakes start() after a failure

    def start(self, timeout: float | None = 30.0) -> ThreadedServer:
        self._thread.start()
        if not self.server.listening.wait(timeout):
            raise RuntimeError(f"uvicorn did not start within {timeout} s")
        if self._failure is not None or not self.server.started:
            raise RuntimeError("uvicorn failed to start") from self._failure
        return self

    def stop(self, timeout: float | None = 10.0) -> None:
        self.server.should_exit = True
        self._thread.join(timeout)

    def __enter__(self) -> ThreadedServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
