"""One ``openai.AsyncOpenAI`` per event loop, re-targeted per rollout with ``with_options``.

Building an ``AsyncOpenAI`` costs about 20 ms of CPU (TLS context, HTTP pool); Strands' own
``client_args=`` mode builds one for *every* model request, which dominated the cost of a rollout.
``with_options(base_url=..., api_key=...)`` costs microseconds and shares the parent's HTTP
connection pool, so every rollout gets a correctly addressed client for free.

The per-rollout copies are memoized per loop in a bounded table (a rollout makes several calls,
and ``with_options`` still costs ~0.1 ms). The base client is keyed by the running event loop
because an ``httpx`` pool must never be used from two loops: Strands' synchronous ``agent("...")`` runs each call on a fresh loop in a worker
thread, and reusing a client made on the server's loop there fails with "bound to a different
event loop".
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openai import AsyncOpenAI

# The base client's own address and key are never used: every call goes through a per-rollout
# ``with_options`` copy. They only have to be syntactically valid.
_UNSET_BASE_URL = "http://127.0.0.1:9/osmosis-unset"
_UNSET_API_KEY = "osmosis-unset"
# Sent when the rollout has no key; OpenAI-compatible servers without auth ignore it.
EMPTY_API_KEY = "EMPTY"

# Per-rollout copies kept per loop; the oldest are dropped beyond this many.
MAX_CACHED_ROLLOUT_CLIENTS = 1024

type _ClientKey = tuple[str, str, float | None, int | None]


class _LoopClients:
    """The shared client of one event loop and its memoized per-rollout copies."""

    __slots__ = ("base", "copies")

    def __init__(self, base: AsyncOpenAI) -> None:
        self.base = base
        self.copies: dict[_ClientKey, AsyncOpenAI] = {}


_lock = threading.Lock()
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClients] = (
    weakref.WeakKeyDictionary()
)


def _loop_clients() -> _LoopClients:
    loop = asyncio.get_running_loop()
    entry = _clients.get(loop)
    if entry is not None:
        return entry
    import openai  # deferred: importing openai costs about a second

    with _lock:
        entry = _clients.get(loop)
        if entry is None:
            base = openai.AsyncOpenAI(
                api_key=_UNSET_API_KEY, base_url=_UNSET_BASE_URL, max_retries=0
            )
            entry = _clients[loop] = _LoopClients(base)
    return entry


def base_client() -> AsyncOpenAI:
    """The running loop's shared client (created on first use)."""
    return _loop_clients().base


def rollout_client(
    base_url: str,
    api_key: str | None,
    *,
    timeout: float | None = None,
    max_retries: int | None = None,
) -> AsyncOpenAI:
    """A client addressing one rollout's policy endpoint, sharing the loop's connection pool."""
    entry = _loop_clients()
    key = (base_url, api_key or EMPTY_API_KEY, timeout, max_retries)
    client = entry.copies.get(key)
    if client is not None:
        return client
    options: dict[str, Any] = {"base_url": base_url, "api_key": key[1]}
    if timeout is not None:
        options["timeout"] = timeout
    if max_retries is not None:
        options["max_retries"] = max_retries
    client = entry.base.with_options(**options)
    # Only this loop's thread touches its table, so no lock is needed here.
    if len(entry.copies) >= MAX_CACHED_ROLLOUT_CLIENTS:
        del entry.copies[next(iter(entry.copies))]
    entry.copies[key] = client
    return client


async def aclose_clients() -> None:
    """Close the running loop's shared client (call at shutdown to release its connections)."""
    loop = asyncio.get_running_loop()
    with _lock:
        entry = _clients.pop(loop, None)
    if entry is not None:
        entry.copies.clear()
        await entry.base.close()
