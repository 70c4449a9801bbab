"""Serving an ASGI app on loopback for a test: in the caller's event loop or a background thread.

:class:`ServedApp` is the lifecycle half of :class:`~osmosis_ai.testing.ScriptedPolicyServer`:
bind the port, run uvicorn until asked to stop (``async with``), or run it in a daemon thread with
its own event loop for sync code (``with``), and the URLs it is reached at.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Generator
from typing import Any, ClassVar, Self

import uvicorn

from osmosis_ai.listening_socket import bind_tcp_listener

__all__ = ["ServedApp"]


class _Uvicorn(uvicorn.Server):
    """uvicorn that signals readiness and leaves the process's signal handlers alone."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        yield


class ServedApp:
    """``app`` served on ``host:port`` (``port=0``: a free one); subclasses set ``app``."""

    #: The name used in error messages, and the serving thread's name.
    _name: ClassVar[str] = "ServedApp"
    _thread_name: ClassVar[str] = "served-app"

    app: Any

    def __init__(self, *, host: str, port: int) -> None:
        self.host = host
        self._requested_port = port
        self._port: int | None = None
        self._server: _Uvicorn | None = None
        self._task: asyncio.Task[None] | None = None
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None
        self._thread_stop: asyncio.Event | None = None

    # -- addresses ------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError(f"{self._name} is not running; use 'async with' or 'with'")
        return self._port

    @property
    def root_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # -- lifecycle in the caller's event loop -------------------------------------------

    async def start(self) -> Self:
        if self._server is not None:
            raise RuntimeError(f"{self._name} is already running")
        sock = bind_tcp_listener(self.host, self._requested_port)
        self._port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
            timeout_keep_alive=30,
        )
        server = _Uvicorn(config)
        self._server = server
        self._task = asyncio.create_task(server.serve(sockets=[sock]))
        ready = asyncio.create_task(server.ready.wait())
        await asyncio.wait({ready, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if not server.ready.is_set():
            ready.cancel()
            self._server = None
            sock.close()
            await self._task  # re-raises the start-up failure
            raise RuntimeError(f"{self._name} failed to start")
        return self

    async def stop(self) -> None:
        server, task = self._server, self._task
        if server is None or task is None:
            return
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await task
        self._server = None
        self._task = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # -- lifecycle in a background thread (sync code) ----------------------------------

    def start_in_thread(self) -> Self:
        """Serve from a daemon thread with its own event loop; returns once it is listening."""
        if self._thread is not None:
            raise RuntimeError(f"{self._name} is already running")
        started = threading.Event()
        failure: list[BaseException] = []

        async def main() -> None:
            self._thread_loop = asyncio.get_running_loop()
            self._thread_stop = asyncio.Event()
            try:
                await self.start()
            except BaseException as exc:
                failure.append(exc)
                started.set()
                return
            started.set()
            try:
                await self._thread_stop.wait()
            finally:
                await self.stop()

        self._thread = threading.Thread(
            target=asyncio.run, args=(main(),), name=self._thread_name, daemon=True
        )
        self._thread.start()
        started.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise failure[0]
        return self

    def stop_thread(self) -> None:
        thread, loop, stop = self._thread, self._thread_loop, self._thread_stop
        if thread is None:
            return
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10)
        self._thread = None
        self._thread_loop = None
        self._thread_stop = None

    def __enter__(self) -> Self:
        return self.start_in_thread()

    def __exit__(self, *exc_info: object) -> None:
        self.stop_thread()
