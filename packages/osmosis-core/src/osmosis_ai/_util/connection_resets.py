"""Which attempt of an HTTP request met a connection reset, and whether any response byte came
first: the facts the policy client's retry rule needs (:func:`osmosis_ai.rollout.policy`'s
transport, the one owner of that rule, decides; this module only observes).

httpcore does a request's socket I/O in the task that sent it, so the attempt in progress is a
context variable (:data:`current_exchange`) the sender sets, and the connection pool's network
backend, wrapped by :func:`observe_resets`, records on it what its streams see: response bytes
read, ECONNRESET on a read or write, and whether a connection was opened for the attempt.
"""

from __future__ import annotations

import contextvars
import errno
import importlib
from dataclasses import dataclass
from typing import Any

__all__ = ["Exchange", "current_exchange", "is_reset", "observe_resets", "observed_backend"]


@dataclass(slots=True)
class Exchange:
    """What the network saw during one attempt of one request (see :func:`observed_backend`)."""

    #: Bytes of a response received.
    received: int = 0
    #: A read or write on the connection failed with ECONNRESET (the peer's kernel sent RST).
    reset: bool = False
    #: The connection was opened for this attempt (not a pooled keep-alive one).
    opened: bool = False


#: The attempt in progress in this task (httpcore does a request's I/O in the caller's task).
current_exchange: contextvars.ContextVar[Exchange | None] = contextvars.ContextVar(
    "osmosis_http_exchange", default=None
)


def is_reset(exc: BaseException) -> bool:
    """Whether ``exc`` or what it wraps is ECONNRESET."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionResetError) or (
            isinstance(current, OSError) and current.errno == errno.ECONNRESET
        ):
            return True
        current = current.__cause__ or current.__context__
    return False


def observed_backend(core: Any, inner: Any) -> Any:
    """``inner`` (an httpcore network backend) whose streams report, to the attempt running in
    the calling task (:data:`current_exchange`), the response bytes they read, a reset, and whether a
    connection was opened for it."""

    def note_failure(exc: BaseException) -> None:
        exchange = current_exchange.get()
        if exchange is not None and is_reset(exc):
            exchange.reset = True

    class ObservedStream(core.AsyncNetworkStream):
        def __init__(self, stream: Any) -> None:
            self.stream = stream

        async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
            try:
                data = await self.stream.read(max_bytes, timeout)
            except Exception as exc:
                note_failure(exc)
                raise
            exchange = current_exchange.get()
            if exchange is not None:
                exchange.received += len(data)
            return data

        async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
            try:
                await self.stream.write(buffer, timeout)
            except Exception as exc:
                note_failure(exc)
                raise

        async def aclose(self) -> None:
            await self.stream.aclose()

        async def start_tls(self, *args: Any, **kwargs: Any) -> Any:
            return ObservedStream(await self.stream.start_tls(*args, **kwargs))

        def get_extra_info(self, info: str) -> Any:
            return self.stream.get_extra_info(info)

    class ObservedBackend(core.AsyncNetworkBackend):
        async def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
            return self._opened(await inner.connect_tcp(*args, **kwargs))

        async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
            return self._opened(await inner.connect_unix_socket(*args, **kwargs))

        async def sleep(self, seconds: float) -> None:
            await inner.sleep(seconds)

        def _opened(self, stream: Any) -> Any:
            exchange = current_exchange.get()
            if exchange is not None:
                exchange.opened = True
            return ObservedStream(stream)

    return ObservedBackend()


def observe_resets(inner: Any) -> bool:
    """Put :func:`observed_backend` under ``inner``'s connection pool (httpx's transport keeps
    it in ``_pool``, httpcore's pool its backend in ``_network_backend``: private names, so
    checked). ``False`` when they are not there: resets are then never retried."""
    pool = getattr(inner, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if pool is None or backend is None:
        return False
    try:
        core = importlib.import_module(type(pool).__module__.split(".", 1)[0])
    except ImportError:
        return False
    if not hasattr(core, "AsyncNetworkBackend"):
        return False
    pool._network_backend = observed_backend(core, backend)
    return True
