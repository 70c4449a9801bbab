"""One ``openai.AsyncOpenAI`` per event loop, re-targeted per rollout with ``with_options``.

Building an ``AsyncOpenAI`` costs about 20 ms of CPU (TLS context, HTTP pool); Strands' own
``client_args=`` mode builds one for *every* model request, which dominated the cost of a rollout.
``with_options(base_url=..., api_key=...)`` costs microseconds and shares the parent's HTTP
connection pool, so every rollout gets a correctly addressed client for free.

The base client is keyed by the running event loop because an ``httpx`` pool must never be used
from two loops: Strands' synchronous ``agent("...")`` runs each call on a fresh loop in a worker
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

_lock = threading.Lock()
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncOpenAI] = (
    weakref.WeakKeyDictionary()
)


def base_client() -> AsyncOpenAI:
    """The running loop's shared client (created on first use)."""
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is not None:
        return client
    import openai  # deferred: importing openai costs about a second

    with _lock:
        client = _clients.get(loop)
        if client is None:
            client = openai.AsyncOpenAI(
                api_key=_UNSET_API_KEY, base_url=_UNSET_BASE_URL, max_retries=0
            )
            _clients[loop] = client
    return client


def rollout_client(
    base_url: str,
    api_key: str | None,
    *,
    timeout: float | None = None,
    max_retries: int | None = None,
) -> AsyncOpenAI:
    """A client addressing one rollout's policy endpoint, sharing the loop's connection pool."""
    options: dict[str, Any] = {"base_url": base_url, "api_key": api_key or EMPTY_API_KEY}
    if timeout is not None:
        options["timeout"] = timeout
    if max_retries is not None:
        options["max_retries"] = max_retries
    return base_client().with_options(**options)


async def aclose_clients() -> None:
    """Close the running loop's shared client (call at shutdown to release its connections)."""
    loop = asyncio.get_running_loop()
    with _lock:
        client = _clients.pop(loop, None)
    if client is not None:
        await client.close()
