"""The zygote: a process forked from the server before its event loop starts, that forks workers.

Starting a worker by exec (``python -m ..._impl.workers.main``) costs a whole interpreter start-up
and a re-import of the rollout's entrypoint and agent framework: hundreds of milliseconds to
seconds per worker, paid again on every restart. The server process has already imported all
of that when ``serve(app, workers=N)`` (or ``osmosis eval run``'s server) puts the pool in
front of the backend, and at that moment it is still single-threaded with no event loop
running. :func:`start_zygote` forks it there. The zygote keeps the imported modules and the
backend as they were, runs no event loop and starts no thread; on each request from the pool
(a JSON line on a private socket pair, the worker's end of its channel attached with
``SCM_RIGHTS``) it forks a worker, which runs the usual worker main loop on a fresh event loop
with the backend it already holds: no import at all. The zygote reaps its workers and reports
each exit status (the pool cannot ``waitpid`` a grandchild), kills them on request (it is
their parent, so a pid it has not reaped yet cannot have been reused), and exits when the
server's end of its socket closes (the server exited or shut the pool down).

Why not :mod:`multiprocessing`'s forkserver with ``set_forkserver_preload``: its server is a
freshly exec'd interpreter that imports the preloaded modules itself, so it still pays one
full import (of the entrypoint too, which it cannot preload for ``python main.py`` without
re-running the script), and it brings its own pickled process objects, resource tracker and
channel, where the pool already has one. Forking from the server process, which has imported
everything anyway, costs nothing.

Fork without exec is only safe in a process with one thread (another thread may hold a lock,
the allocator's or the import system's, that stays locked forever in the child) and is only
used on Linux by default (on macOS system frameworks such as the proxy lookup ``httpx`` does
are not fork-safe). :func:`fork_unavailable` says why not; then, or when the zygote has died,
workers start by exec as before. ``OSMOSIS_ROLLOUT_WORKER_START=exec`` forces exec (for an
entrypoint that opens connections or files at import that workers must not share);
``=fork`` also forks outside Linux.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import signal
import socket
import sys
import threading
import traceback
from collections import deque
from collections.abc import Callable
from typing import Any, NoReturn

from osmosis_ai._util import framing
from osmosis_ai.rollout.server._impl.heap import freeze_before_fork
from osmosis_ai.rollout.server._impl.workers import WorkerSetupError

logger = logging.getLogger("osmosis_ai.rollout.server")

#: ``exec``: always start workers by exec; ``fork``: fork them from the zygote wherever
#: ``os.fork`` exists; unset or ``auto``: fork on Linux, exec elsewhere.
ENV_WORKER_START = "OSMOSIS_ROLLOUT_WORKER_START"
_MODES = ("auto", "fork", "exec")


def fork_unavailable() -> str | None:
    """Why workers cannot be forked from this process now (``None``: they can)."""
    mode = os.environ.get(ENV_WORKER_START, "").strip().lower() or "auto"
    if mode not in _MODES:
        raise WorkerSetupError(
            f"{ENV_WORKER_START}={mode!r} is not one of {', '.join(_MODES)}; set it to exec to "
            "start every worker as a new interpreter, or unset it"
        )
    if mode == "exec":
        return f"{ENV_WORKER_START}=exec"
    return fork_refused(auto=mode == "auto", forcing=f"{ENV_WORKER_START}=fork")


def fork_refused(*, auto: bool, forcing: str) -> str | None:
    """Why this process must not fork without exec now (``None``: it may): no ``fork``; not
    Linux when the choice is ``auto`` (``forcing`` names the setting that tries anyway); other
    threads or a running event loop. The protocol process of ``serve()`` asks the same."""
    if not hasattr(os, "fork"):
        return "this platform has no fork()"
    if auto and not sys.platform.startswith("linux"):
        return f"fork without exec is used on Linux only ({forcing} to try it)"
    if threading.active_count() > 1:
        names = ", ".join(t.name for t in threading.enumerate() if t is not threading.main_thread())
        return f"threads are already running ({names}); forking would copy their locks"
    with contextlib.suppress(RuntimeError):
        asyncio.get_running_loop()
        return "an event loop is already running in this process"
    return None


def start_zygote(backend: Any) -> tuple[int, socket.socket] | None:
    """Fork the zygote holding ``backend``; its pid and the server's end of its socket, or
    ``None`` (with a debug log saying why) when workers must start by exec."""
    reason = fork_unavailable()
    if reason is not None:
        logger.debug("rollout workers will start by exec: %s", reason)
        return None
    freeze_before_fork()
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the zygote: never return into the caller's stack
        ours.close()
        exit_forked_child(lambda: _zygote_main(theirs, backend))
    theirs.close()
    logger.debug("rollout worker zygote started (pid %d): workers start by fork", pid)
    return pid, ours


def _zygote_main(control: socket.socket, backend: Any) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the server drains, then closes us
    stdin_from_devnull()
    _close_listeners(keep=control.fileno())
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup fd makes select() return
    children: set[int] = set()
    fds: deque[int] = deque()
    lines = framing.LineSplitter()
    while True:
        readable = select.select([control, wake_r], [], [])[0]
        if wake_r in readable:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
        _reap(control, children)
        if control not in readable:
            continue
        data, received, _flags, _addr = socket.recv_fds(control, 65536, 8)
        fds.extend(received)
        if not data:
            return 0  # the server's end closed: the workers exit when their channels close
        for request in lines.feed(data):
            if request["op"] == "kill":
                if request["pid"] in children:
                    os.kill(request["pid"], request["signal"])
                continue
            fd = fds.popleft()
            pid = os.fork()
            if pid == 0:
                _worker_child(fd, request["spec"], backend, close=(control, wake_r, wake_w))
            os.close(fd)
            children.add(pid)
            _send(control, {"op": "spawned", "token": request["token"], "pid": pid})


def _reap(control: socket.socket, children: set[int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        _send(control, {"op": "exited", "pid": pid, "code": os.waitstatus_to_exitcode(status)})


def _send(control: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the server has gone: the next recv sees it
        control.sendall(framing.encode(message))


def _worker_child(fd: int, spec: dict[str, Any], backend: Any, close: tuple[Any, ...]) -> None:
    """In a forked worker: a fresh process's signal state, then the worker main loop."""

    def body() -> int:
        for item in close:
            item.close() if isinstance(item, socket.socket) else os.close(item)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from osmosis_ai.rollout.server._impl.workers.main import run_forked

        run_forked(fd, spec, backend)
        return 0

    exit_forked_child(body)


def exit_forked_child(body: Callable[[], int]) -> NoReturn:
    """In a child forked without exec: run ``body`` and exit with its code, never returning
    into the caller's stack (nor running its ``atexit``): ``SystemExit`` gives its code, any
    other exception is printed and gives 1; stdio is flushed first."""
    code = 1
    try:
        code = body()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        flush_stdio()
        os._exit(code)


def stdin_from_devnull() -> None:
    """Workers get no stdin, as exec'd ones (``osmosis eval run``'s server reads a pipe there);
    nor does ``serve()``'s protocol process (the caller's process keeps it)."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)


def _close_listeners(keep: int) -> None:
    """Close listening sockets inherited from the server (Linux: ``/proc/self/fd``), so a
    worker never holds the server's port open."""
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd <= 2 or fd == keep:
                continue
            with contextlib.suppress(OSError):
                copy = os.dup(fd)
                try:
                    probe = socket.socket(fileno=copy)
                except OSError:  # not a socket
                    os.close(copy)
                    continue
                with probe:
                    listening = probe.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
                if listening:
                    os.close(fd)


def flush_stdio() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
