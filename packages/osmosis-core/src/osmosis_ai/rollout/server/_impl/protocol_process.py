"""The protocol process: ``serve(app)`` answers HTTP from a process of its own (issue 39).

With the protocol in a thread (:mod:`.agent_loop`), admission still shares the interpreter lock
with the agents: a busy single-process server is CPU-bound and an admission waits for the lock
about as long as agent work keeps it (C=512, Strands / OpenAI Agents on a quiet 2-core machine:
p99 107 / 116 ms). So ``serve(app)``, right before it serves, forks a **protocol process** that
runs uvicorn and the whole :class:`~.service.RolloutService` (admission, leases, long polls,
results, the outbox, callbacks, the drain), while the calling process stays the **agent
process**: the caller's ``lifespan``, every ``backend.execute`` and ``backend.shutdown`` run on
its main thread's event loop, where they ran before. What rollout code can see does not change:
the same pid (the one a supervisor signals), the main thread (``signal.alarm`` timeouts), stdin
(``breakpoint()``), module state, and whatever the script does after ``serve()`` returns.

The two talk over a socket pair with the worker pool's channel: in the protocol process a
:class:`AgentProcessPool` (a :class:`~.workers.pool.WorkerPool` of one) sees the agent process
as its only worker, which it never restarts, never pings and never kills (a workflow holding
its loop delays only agent work, as with the protocol thread).

* **Signals.** The protocol process has a process group of its own, so a terminal's Ctrl-C
  reaches the agent process only; it forwards each SIGINT / SIGTERM to the protocol process
  once, which drains as ``serve()`` always has (a second signal stops at once), closes the
  channel and exits; the agent process then cancels what is left, shuts the backend down,
  leaves the lifespan and raises the signal again, as uvicorn does.
* **Deaths.** If the protocol process dies, ``serve()`` raises saying how. If the agent process
  dies, the kernel kills the protocol process with it (``PR_SET_PDEATHSIG``), so a ``kill -9``
  of the server's pid is the crash it always was (the journal recovers at the next start) and
  nothing is left listening without agents; the protocol process also exits at once, writing
  nothing more, when it sees the agent process's end of the channel close unasked (the kernel
  closes it a moment before it sends the parent-death signal).
* **The port** is bound here before the fork, so a bind error is raised by ``serve()`` itself.

**When.** ``serve()`` forks the protocol off when it is safe and ``OSMOSIS_ROLLOUT_PROTOCOL`` is
unset or ``auto``: on Linux (elsewhere system libraries may not survive ``fork`` without
``exec``), with no other thread and no event loop running in this process, and for an app the
caller has added no routes or middleware to (those run in the protocol process and could read
state only the agent process has). Otherwise the protocol gets a thread, as before.
``OSMOSIS_ROLLOUT_PROTOCOL=thread`` always uses the thread; ``=process`` forks wherever
``fork`` is safe, custom routes included (they then run in the protocol process).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
from collections.abc import Callable, Sequence
from typing import Any

from osmosis_ai.errors import ConfigurationError, RolloutServerError

logger = logging.getLogger("osmosis_ai.rollout.server")

#: ``auto`` (default): a protocol process when it is safe; ``process``: whenever ``fork`` is
#: safe; ``thread``: the protocol thread of :mod:`.agent_loop`.
ENV_PROTOCOL = "OSMOSIS_ROLLOUT_PROTOCOL"
_MODES = ("auto", "process", "thread")


def app_shape(app: Any) -> tuple[int, int]:
    """The app's routes and middleware, counted: recorded by ``create_rollout_server`` so
    ``serve`` can tell whether the caller added any."""
    return len(app.router.routes), len(getattr(app, "user_middleware", ()))


def unavailable(app: Any) -> str | None:
    """Why ``serve(app)`` keeps the protocol in a thread (``None``: it forks it off)."""
    from osmosis_ai.rollout.server._impl.workers import zygote

    mode = os.environ.get(ENV_PROTOCOL, "").strip().lower() or "auto"
    if mode not in _MODES:
        raise ConfigurationError(
            f"{ENV_PROTOCOL}={mode!r} is not one of {', '.join(_MODES)}; set it to thread to "
            "answer HTTP from a thread of this process, process to fork a protocol process, or "
            "unset it"
        )
    if mode == "thread":
        return f"{ENV_PROTOCOL}=thread"
    reason = zygote.fork_refused(auto=mode == "auto", forcing=f"{ENV_PROTOCOL}=process")
    if reason is not None:
        return reason
    if mode == "auto":
        return _changed_by_caller(app)
    return None


def _changed_by_caller(app: Any) -> str | None:
    """Why ``app`` is not just what ``create_rollout_server`` built (``None``: it is)."""
    built = getattr(app.state, "osmosis_built_shape", None)
    if built is None or getattr(app, "router", None) is None:
        return (
            "the app is not the one create_rollout_server() returned (wrapped?); "
            f"{ENV_PROTOCOL}=process forks anyway"
        )
    if app_shape(app) != built:
        return (
            "routes or middleware were added to the app (they could read state of the agent "
            f"process); {ENV_PROTOCOL}=process forks anyway"
        )
    return None


def run_split(app: Any, server: Any, sockets: Sequence[socket.socket] | None) -> None:
    """Serve ``app`` with the protocol in a forked process; rollouts run here (see above)."""
    from osmosis_ai._util import serving
    from osmosis_ai.rollout.server._impl.heap import freeze_before_fork
    from osmosis_ai.rollout.server._impl.workers.zygote import exit_forked_child

    service = app.state.rollout_service
    listeners = list(sockets) if sockets else [_listening(server.config)]
    ours, theirs = socket.socketpair()
    freeze_before_fork()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the protocol process: never returns into the caller's stack
        ours.close()
        exit_forked_child(lambda: _protocol_main(service, server, listeners, theirs, parent))
    theirs.close()
    if not sockets:
        for listener in listeners:
            listener.close()  # the protocol process holds the port now
    _agent_main(app, service, ours, pid, lambda: serving.new_loop(server.config))


def _listening(config: Any) -> socket.socket:
    """The server's socket, bound and listening: uvicorn logs "running on" as it binds, and a
    client that connects then must wait in the backlog, not be refused."""
    sock = config.bind_socket()
    sock.listen(config.backlog)
    return sock


# -- the protocol process ---------------------------------------------------------------------


def _die_with(parent: int) -> None:
    """Be killed when ``parent`` dies (Linux ``PR_SET_PDEATHSIG``): a ``kill -9`` of the
    server's pid stops everything at once, as it did with one process; the journal then
    recovers at the next start. Checked after: the parent may have died before the call."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


def _protocol_main(
    service: Any,
    server: Any,
    listeners: list[socket.socket],
    channel: socket.socket,
    parent: int,
) -> int:
    """The protocol process's life; 0 after a SIGINT too (forwarded, and raised again by
    uvicorn after the drain)."""
    from osmosis_ai._util import serving
    from osmosis_ai.rollout.server._impl.workers.attached import AgentProcessPool
    from osmosis_ai.rollout.server._impl.workers.zygote import stdin_from_devnull

    try:
        _die_with(parent)
        os.setpgid(0, 0)  # a terminal's Ctrl-C goes to the agent process, which forwards it
        stdin_from_devnull()
        service.caller_lifespan = None  # entered by the agent process
        service.use_backend(AgentProcessPool(service.backend, channel, parent))
        serving.run(server, sockets=listeners)
    except KeyboardInterrupt:
        pass
    return 0


# -- the agent process ------------------------------------------------------------------------


class ProtocolProcessDied(RolloutServerError):
    """The protocol process of ``serve(app)`` exited on its own (not after a signal)."""


def _agent_main(
    app: Any,
    service: Any,
    channel: socket.socket,
    child: int,
    new_loop: Callable[[], asyncio.AbstractEventLoop],
) -> None:
    from osmosis_ai.rollout.server._impl.workers.main import _serve

    captured: list[int] = []

    def forward(sig: int, _frame: Any) -> None:
        captured.append(sig)
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, sig)

    handled = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, forward) for sig in handled}
    lifespan = service.caller_lifespan
    around = lifespan(app) if lifespan is not None else None
    served = False
    try:
        # A loop of the kind uvicorn would serve on (uvloop when installed), as the protocol
        # thread's agent loop is.
        with asyncio.Runner(loop_factory=new_loop) as runner:
            runner.run(_serve(channel.detach(), {}, service.backend, around=around, start="main"))
        served = True
    finally:
        if not served:  # failed before or while serving: make sure the protocol process ends
            channel.close()  # (a no-op once detached: _serve closed its end then)
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGTERM)
        code = _reap(child)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if code != 0 and not (code is not None and code < 0 and -code in captured):
        raise ProtocolProcessDied(
            f"the rollout server's protocol process (pid {child}) {_describe(code)}; its "
            "output above says why"
        )
    for sig in reversed(captured):
        signal.raise_signal(sig)  # what uvicorn does after a signalled shutdown


def _reap(pid: int) -> int | None:
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            return None
        except InterruptedError:  # pragma: no cover - PEP 475 retries; kept for clarity
            continue
        return os.waitstatus_to_exitcode(status)


def _describe(code: int | None) -> str:
    from osmosis_ai.rollout.server._impl.workers.process import describe_exit

    return describe_exit(code)
