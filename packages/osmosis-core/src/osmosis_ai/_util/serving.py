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
  :func:`run_beside`: serve from a thread of its own while this (the main) thread runs another
  event loop, until the server exits (the rollout server's protocol and agent loops).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
import socket
import threading
from collections.abc import Generator, Sequence
from typing import Any

__all__ = [
    "ThreadedServer",
    "is_loopback_host",
    "new_loop",
    "run",
    "run_beside",
    "server_class",
    "start",
    "stop",
    "uvicorn_config",
    "uvicorn_server",
]


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a name or an IP address) is this machine: ``localhost`` or a loopback IP."""
    if host == "localhost":
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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


def new_loop(config: Any) -> asyncio.AbstractEventLoop:
    """A new event loop of the kind uvicorn would serve ``config`` on (uvloop when installed)."""
    factory_of = getattr(config, "get_loop_factory", None)  # uvicorn >= 0.36
    if factory_of is None:
        config.setup_event_loop()  # older uvicorn: installs uvloop's policy when it is there
        return asyncio.new_event_loop()
    factory = factory_of()
    return factory() if factory is not None else asyncio.new_event_loop()


def run_beside(
    server: Any,
    loop: asyncio.AbstractEventLoop,
    *,
    sockets: Sequence[socket.socket] | None = None,
) -> None:
    """Serve ``server`` (on ``sockets`` when given, bound by the caller) from a thread of its own
    while this thread runs ``loop``; return once the server has exited and ``loop``'s remaining
    tasks are cancelled and the loop closed.

    From the main thread, SIGINT and SIGTERM go to ``server.handle_exit`` (as uvicorn's own
    capture does; they are raised again once it has exited), so a drain starts even while
    ``loop`` is busy (from another thread, signals are left alone, as uvicorn does). A failure of the server thread (``SystemExit`` when it cannot bind) is
    raised here."""
    failure: list[BaseException] = []

    def serve() -> None:
        try:
            run(server, sockets=sockets)
        except BaseException as exc:  # raised in the caller's thread
            failure.append(exc)
        finally:
            with contextlib.suppress(RuntimeError):  # closed already
                loop.call_soon_threadsafe(loop.stop)

    handled = (signal.SIGINT, signal.SIGTERM)
    main = threading.current_thread() is threading.main_thread()  # only it may set handlers
    previous = {sig: signal.signal(sig, server.handle_exit) for sig in handled} if main else {}
    thread = threading.Thread(target=serve, name="osmosis-protocol")
    asyncio.set_event_loop(loop)
    try:
        thread.start()
        loop.run_forever()
    finally:
        thread.join()
        try:
            _cancel_all(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    if failure:
        raise failure[0]
    for captured in reversed(getattr(server, "_captured_signals", []) if main else []):
        signal.raise_signal(captured)  # what uvicorn does after a signalled shutdown


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    tasks = asyncio.all_tasks(loop)
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


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
