"""Serving an ASGI app on loopback for a test: in the caller's event loop or a background thread.

:class:`ServedApp` is the lifecycle half of :class:`~osmosis_ai.testing.ScriptedPolicyServer`:
bind the port, run uvicorn until asked to stop (``async with``), or run it in a daemon thread with
its own event loop for sync code (``with``), and the URLs it is reached at.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any, ClassVar, Self

from osmosis_ai._util import serving as _serving
from osmosis_ai.listening_socket import bind_tcp_listener

__all__ = ["ServedApp"]


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
        self._server: Any = None
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
        config = _serving.uvicorn_config(
            self.app,
            quiet=True,
            lifespan="off",
            timeout_graceful_shutdown=1,
            timeout_keep_alive=30,
        )
        server = _serving.uvicorn_server(config, capture_signals=False)
        self._server = server
        try:
            self._task = await _serving.start(server, sockets=[sock])
        except BaseException:
            self._server = None
            sock.close()
            raise
        return self

    async def stop(self) -> None:
        server, task = self._server, self._task
        if server is None or task is None:
            return
        with contextlib.suppress(asyncio.CancelledError):
            await _serving.stop(server, task)
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
