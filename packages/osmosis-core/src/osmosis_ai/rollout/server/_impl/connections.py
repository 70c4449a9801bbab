"""Bounded connections for the rollout server under uvicorn.

Left alone, uvicorn keeps a connection that never sends a request open forever, and one that
sends half a request head too. A few hundred of those exhaust the process's file descriptors
(1,024 by default on Linux): from then on ``accept()`` fails and no authenticated request gets
through. Two rules fix that, in a uvicorn HTTP protocol subclass:

* **Header-read timeout.** A connection must complete each request head within
  ``header_timeout_sec`` of its first byte (a new connection: of being accepted); otherwise it
  is closed. Requests being served (long polls included) are never affected.
* **Connection cap with headroom.** At most ``max_connections`` are open; the default leaves an
  eighth of the descriptor limit (at least 64) for files, trajectories and outbound requests.
  When a new connection would exceed the cap, the connection idle the longest (no request in
  progress: never-used, or kept alive between requests) is closed to make room; if none is idle,
  the new connection is closed. So an idle flood cannot lock out working clients, and connections
  that are serving requests are never sacrificed.

A client's half-close (end of its stream) is not a disconnect: the requests it sent before it
(pipelined ones included) are answered, then the connection is closed.

The keep-alive timeout between requests stays uvicorn's ``timeout_keep_alive`` (``serve``'s
default is 2160 s, above the platform load balancer's 2100 s idle timeout); under pressure idle
keep-alive connections are reclaimed by the cap's eviction.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

logger = logging.getLogger("osmosis_ai.rollout.server")

DEFAULT_HEADER_TIMEOUT_SEC = 30.0
_MIN_RESERVE = 64
_MIN_CAP = 16
_WARN_EVERY_SEC = 60.0


def default_max_connections() -> int:
    """The cap for this process: its descriptor limit less an eighth (at least 64) of headroom."""
    try:
        import resource
    except ImportError:  # not a Unix: no descriptor limit to read
        return 512
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        soft = 65536
    return max(soft - max(_MIN_RESERVE, soft // 8), _MIN_CAP)


class _Guard:
    """Shared by every connection of one server: idle connections, oldest first."""

    def __init__(self, max_connections: int, header_timeout_sec: float) -> None:
        self.max_connections = max_connections
        self.header_timeout_sec = header_timeout_sec
        self.idle: dict[Any, None] = {}  # insertion order = idle since
        self.closing = 0  # evicted, not yet gone from uvicorn's connection set
        self.evicted = 0
        self._warned_at = -_WARN_EVERY_SEC

    def make_room(self, connections: set[Any], newcomer: Any) -> None:
        while len(connections) - self.closing > self.max_connections:
            victim = next((c for c in self.idle if c is not newcomer), newcomer)
            self.idle.pop(victim, None)
            victim._osmosis_evicted = True
            self.closing += 1
            self.evicted += 1
            victim.transport.close()
            if victim is newcomer:
                break
        now = time.monotonic()
        if now - self._warned_at >= _WARN_EVERY_SEC:
            self._warned_at = now
            logger.warning(
                "connection cap of %d reached: closing the connections idle the longest "
                "(%d so far); raise the file descriptor limit or max_connections if clients "
                "legitimately hold this many",
                self.max_connections,
                self.evicted,
            )


class _HalfClose:
    """The client's half-close ("nothing more from me") is not a disconnect. Returning a false
    value from ``eof_received`` would have asyncio close the socket at once, dropping the
    answers to requests already received (pipelined ones, or one whose answer waits in this
    turn's coalesced write): they are answered, then the connection closes (the protocol's
    ``on_response_complete``). Nothing in progress: it closes now."""

    _osmosis_eof = False
    cycle: Any
    transport: Any

    def _osmosis_idle(self) -> bool:
        cycle = self.cycle
        return cycle is None or cycle.response_complete

    def eof_received(self) -> bool:
        self._osmosis_eof = True
        if self._osmosis_idle() and not getattr(self, "pipeline", None):
            self.transport.close()  # the coalescing transport sends what is pending first
        return True


def guarded_protocol(
    *, max_connections: int | None = None, header_timeout_sec: float = DEFAULT_HEADER_TIMEOUT_SEC
) -> type[asyncio.Protocol]:
    """A uvicorn HTTP protocol class (pass as ``uvicorn.Config(http=...)``) with both rules."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    from osmosis_ai.rollout.server._impl.coalesce import TurnCoalescingTransport

    if header_timeout_sec <= 0:
        raise ValueError("header_timeout_sec must be greater than zero")
    cap = default_max_connections() if max_connections is None else max_connections
    if cap < 1:
        raise ValueError("max_connections must be at least 1")
    guard = _Guard(cap, header_timeout_sec)
    base: Any = AutoHTTPProtocol

    class GuardedHTTPProtocol(_HalfClose, base):
        _osmosis_head_timer: asyncio.TimerHandle | None = None
        _osmosis_evicted = False

        def connection_made(self, transport: Any) -> None:
            # Writes of one turn leave in one send: a response's head with its body (.coalesce).
            super().connection_made(TurnCoalescingTransport(transport, self.loop))
            guard.idle[self] = None
            self._osmosis_arm()
            if len(self.connections) - guard.closing > guard.max_connections:
                guard.make_room(self.connections, self)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            cycle = self.cycle
            if cycle is None or cycle.response_complete:
                # No request started: a partial head (its clock starts now, or at accept).
                if self._osmosis_head_timer is None and not self.transport.is_closing():
                    self._osmosis_arm()
            else:  # a request is being served: neither idle nor on the head clock
                if self._osmosis_head_timer is not None:
                    self._osmosis_disarm()
                guard.idle.pop(self, None)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            cycle = self.cycle
            if (cycle is None or cycle.response_complete) and not self.transport.is_closing():
                if self._osmosis_eof:  # the client sends nothing more: the last one answered
                    self.transport.close()
                    return
                guard.idle.pop(self, None)
                guard.idle[self] = None  # idle since now: the back of the queue

        def connection_lost(self, exc: Exception | None) -> None:
            self._osmosis_disarm()
            guard.idle.pop(self, None)
            if self._osmosis_evicted:
                self._osmosis_evicted = False
                guard.closing -= 1
            super().connection_lost(exc)

        def _osmosis_arm(self) -> None:
            self._osmosis_disarm()
            self._osmosis_head_timer = self.loop.call_later(
                guard.header_timeout_sec, self._osmosis_head_timeout
            )

        def _osmosis_disarm(self) -> None:
            if self._osmosis_head_timer is not None:
                self._osmosis_head_timer.cancel()
                self._osmosis_head_timer = None

        def _osmosis_head_timeout(self) -> None:
            self._osmosis_head_timer = None
            if self._osmosis_idle() and not self.transport.is_closing():
                self.transport.close()

    GuardedHTTPProtocol.__name__ = GuardedHTTPProtocol.__qualname__ = "GuardedHTTPProtocol"
    return GuardedHTTPProtocol
