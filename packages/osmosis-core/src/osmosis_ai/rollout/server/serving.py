"""``serve``: run a rollout server app with uvicorn, with the right defaults.

Binds 127.0.0.1 unless told otherwise. The port comes from the argument, else
``_OSMOSIS_ROLLOUT_PORT`` (set by supervisors such as ``osmosis eval run``), else 8000.
``timeout_keep_alive`` defaults to 2160 s, above the 2100 s idle timeout of the platform's load
balancer, so pooled controller connections are not cut mid-run. Connections are bounded
(:mod:`._impl.connections`): a request head must arrive within ``header_timeout_sec``, and past
``max_connections`` (default: the descriptor limit less an eighth) the connection idle the
longest is closed, so idle connections cannot lock out working clients. On the first SIGTERM/SIGINT the app starts
to drain (503 + ``Retry-After`` for new rollouts, long polls woken) while the listener stays
open: polls, result fetches, status and health are served until every rollout has finished and
its result was fetched (or its callbacks answered), or ``drain_grace_sec`` is over; only then
does uvicorn close the listener and the app cancel what is left. A second signal stops at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

# is_loopback_host lives with the other loopback-serving plumbing; this is its public name.
from osmosis_ai._util.serving import is_loopback_host as is_loopback_host
from osmosis_ai.rollout.server._impl.connections import DEFAULT_HEADER_TIMEOUT_SEC, guarded_protocol

ENV_ROLLOUT_PORT = "_OSMOSIS_ROLLOUT_PORT"
DEFAULT_PORT = 8000
DEFAULT_TIMEOUT_KEEP_ALIVE = 2160

logger = logging.getLogger("osmosis_ai.rollout.server")


def resolve_port(port: int | None) -> int:
    """The argument, else ``_OSMOSIS_ROLLOUT_PORT``, else 8000 (0 asks for a free port)."""
    if port is None:
        raw = os.environ.get(ENV_ROLLOUT_PORT, "").strip()
        if not raw:
            return DEFAULT_PORT
        try:
            port = int(raw)
        except ValueError:
            raise ValueError(
                f"{ENV_ROLLOUT_PORT}={raw!r} is not a port number; set it to an integer "
                "between 0 and 65535 or unset it"
            ) from None
    if not 0 <= port <= 65535:
        raise ValueError(f"port must be between 0 and 65535, got {port}")
    return port


def serve(app: Any, *, workers: int | str | None = None, **options: Any) -> None:
    """Serve ``app`` (from ``create_rollout_server``) until SIGINT/SIGTERM, then drain.

    ``workers``: run rollouts in this many worker processes (``"auto"``: the usable cores, at
    most 8); ``None`` reads ``OSMOSIS_ROLLOUT_WORKERS`` and defaults to 1, rollouts in this
    process: the rollouts (with the ``lifespan`` given to ``create_rollout_server``) run on this
    thread's event loop, and the protocol (HTTP, admission, leases, long polls, results, the
    outbox) apart from them, so busy agents never delay an admission or a poll: on Linux in a
    process this call forks (:mod:`._impl.protocol_process`; not for an app the caller added
    routes or middleware to), else in a thread with an event loop of its own;
    ``OSMOSIS_ROLLOUT_PROTOCOL=thread`` keeps the thread, ``=process`` always forks
    (``create_rollout_server(protocol_thread=False)``: one loop for both). On Linux the workers are forked from a zygote this call forks first, so they
    start with everything already imported (:mod:`._impl.workers.zygote`); otherwise, or with
    ``OSMOSIS_ROLLOUT_WORKER_START=exec``, each imports the script that defines ``app`` (as
    ``__mp_main__``, so its ``if __name__ == "__main__":`` block does not run) and rebuilds
    the backend from it.
    ``options`` are :func:`uvicorn_config`'s: ``host`` (default 127.0.0.1), ``port``,
    ``timeout_keep_alive`` (2160 s), ``header_timeout_sec`` (how long a connection may take to
    send a request head), ``max_connections`` (``None``: the descriptor limit less an eighth,
    at least 64, of headroom); any other keyword argument goes to ``uvicorn.Config``.
    """
    from osmosis_ai.rollout.server._impl.workers import WorkerImportDone, in_worker, resolve_workers

    if in_worker():
        raise WorkerImportDone  # a worker importing the script: the app exists, stop here
    count = resolve_workers(workers)
    if count > 1:
        from osmosis_ai.rollout.server._impl.workers.pool import use_workers

        use_workers(app, count)
    config = uvicorn_config(app, **options)
    service = getattr(getattr(app, "state", None), "rollout_service", None)
    if service is not None and config.port:  # a restart on this port finds this outbox
        service.outbox_instance = f"{config.host}-{config.port}"
    run_server(app, _DrainingServer(config), split=True)


def run_server(
    app: Any,
    server: Any,
    *,
    sockets: Sequence[socket.socket] | None = None,
    split: bool = False,
) -> None:
    """Run uvicorn ``server`` (serving ``app``, on ``sockets`` when given) until it exits, the way
    :func:`serve` runs it: a rollout server in one process gets the protocol apart from the
    rollouts (``split``: in a forked process when :mod:`._impl.protocol_process` allows it;
    else a thread: HTTP, admission, polls on a loop of their own; the rollouts on this thread's
    loop, see :mod:`._impl.agent_loop`); with workers, ``protocol_thread=False`` or any other
    app, one loop. ``eval run``'s own rollout server runs through this too (with the thread)."""
    from osmosis_ai._util import serving

    service = getattr(getattr(app, "state", None), "rollout_service", None)
    pooled = service is not None and hasattr(service.backend, "start_workers")  # workers=N
    if service is None or pooled or not service.settings.protocol_thread:
        serving.run(server, sockets=sockets)
        return
    if split:
        from osmosis_ai.rollout.server._impl import protocol_process

        reason = protocol_process.unavailable(app)
        if reason is None:
            protocol_process.run_split(app, server, sockets)
            return
        logger.info("rollout server: the protocol runs in a thread of this process (%s)", reason)
    # One process: the protocol in a thread of its own, the rollouts on this thread's loop.
    loop = serving.new_loop(server.config)
    service.use_agent_loop(loop)
    interval = sys.getswitchinterval()
    _shorten_switch_interval()
    try:
        serving.run_beside(server, loop, sockets=sockets)
    finally:
        sys.setswitchinterval(interval)


#: The interpreter's switch interval while the protocol has a thread of its own (CPython's
#: default is 5 ms). The protocol thread releases the interpreter lock at every socket call; with
#: rollouts keeping the main thread busy, getting it back takes up to one interval each time, and
#: an admission makes several such calls (measured, C=512 Strands: p99 105 ms at 5 ms, 90 ms at
#: 0.5 ms, same CPU per rollout). Only a thread waiting for the lock is affected by the interval.
PROTOCOL_SWITCH_INTERVAL_SEC = 0.0005
_DEFAULT_SWITCH_INTERVAL_SEC = 0.005


def _shorten_switch_interval() -> None:
    """:data:`PROTOCOL_SWITCH_INTERVAL_SEC`, unless the program chose its own interval."""
    if sys.getswitchinterval() == _DEFAULT_SWITCH_INTERVAL_SEC:
        sys.setswitchinterval(PROTOCOL_SWITCH_INTERVAL_SEC)


def uvicorn_config(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    timeout_keep_alive: int = DEFAULT_TIMEOUT_KEEP_ALIVE,
    header_timeout_sec: float = DEFAULT_HEADER_TIMEOUT_SEC,
    max_connections: int | None = None,
    **uvicorn_options: Any,
) -> Any:
    """The ``uvicorn.Config`` that :func:`serve` runs (for callers that run uvicorn themselves,
    such as on a pre-bound socket): the same defaults and connection bounds."""
    from osmosis_ai._util.serving import uvicorn_config as loopback_config

    uvicorn_options.setdefault(
        "http",
        guarded_protocol(max_connections=max_connections, header_timeout_sec=header_timeout_sec),
    )
    # The server reads neither the client's address nor the scheme, so uvicorn's X-Forwarded-*
    # middleware (a coroutine and its state per request, alive for a whole long poll) is off.
    uvicorn_options.setdefault("proxy_headers", False)
    # Per response, uvicorn checks every header with two regular expressions and builds the
    # access-log arguments (the path %-quoted again) even when that logger is silenced: no
    # "server: uvicorn" header (it only names the software), and no access log when the log
    # level would drop it anyway.
    uvicorn_options.setdefault("server_header", False)
    if _silences_access_log(uvicorn_options.get("log_level")):
        uvicorn_options.setdefault("access_log", False)
    return loopback_config(
        app,
        host=host,
        port=resolve_port(port),
        timeout_keep_alive=timeout_keep_alive,
        **uvicorn_options,
    )


def _silences_access_log(level: str | int | None) -> bool:
    """Whether uvicorn's ``log_level`` drops its access log (INFO) anyway."""
    import logging

    if isinstance(level, str):
        level = logging.getLevelName(level.upper())
    return isinstance(level, int) and level > logging.INFO


class _DrainingServer:
    """A ``uvicorn.Server`` that starts the app's drain on the first exit signal."""

    def __new__(cls, config: Any) -> Any:
        from osmosis_ai._util.serving import server_class

        class DrainingServer(server_class()):
            _loop: asyncio.AbstractEventLoop | None = None
            _draining = False
            _drain_task: asyncio.Future[None] | None = None

            async def startup(self, sockets: Any = None) -> None:
                self._loop = asyncio.get_running_loop()
                await super().startup(sockets=sockets)
                for server in self.servers:
                    for sock in server.sockets:
                        address = sock.getsockname()
                        if isinstance(address, tuple):
                            logger.info(
                                "rollout server listening on http://%s:%d", address[0], address[1]
                            )

            def handle_exit(self, sig: int, frame: FrameType | None) -> None:
                service = getattr(getattr(self.config.app, "state", None), "rollout_service", None)
                if service is None or self._loop is None or self._draining or self.should_exit:
                    super().handle_exit(sig, frame)  # a second signal stops at once
                    return
                self._draining = True
                self._captured_signals.append(sig)  # re-raised after the drain, as uvicorn does
                self._loop.call_soon_threadsafe(self._start_drain, service)

            def _start_drain(self, service: Any) -> None:
                self._drain_task = asyncio.ensure_future(self._drain(service))

            async def _drain(self, service: Any) -> None:
                # Keep the listener open (polls, results, status, health; 503 for new
                # rollouts) until nothing is left to fetch or the grace period is over.
                try:
                    await service.drained()
                finally:
                    self.should_exit = True

        return DrainingServer(config)
