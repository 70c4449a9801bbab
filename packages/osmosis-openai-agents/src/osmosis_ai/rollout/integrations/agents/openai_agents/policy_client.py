"""The ``AsyncOpenAI`` clients that carry policy calls.

Building an ``AsyncOpenAI`` costs tens of milliseconds of CPU (it builds an HTTP client and a
TLS context), and a client must not be shared across event loops. So there is one *base*
client per running event loop, and each policy call derives a lightweight view of it with
``with_options(base_url=..., api_key=...)``: the view shares the base's connection pool, so
200 concurrent rollouts use one pool while each request still goes to its own rollout's URL.

The base client is built with explicit placeholder credentials so that nothing from the
user's OpenAI environment (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``OPENAI_ORG_ID``,
``OPENAI_PROJECT_ID``) is ever sent to the policy.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from openai import AsyncOpenAI

# Sent as the bearer token when the rollout has no API key (vLLM's convention for "no key").
NO_API_KEY = "EMPTY"
# The base client is never used directly; every call overrides the URL.
_UNBOUND_URL = "http://127.0.0.1:9/osmosis-unbound"

_base_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncOpenAI] = (
    weakref.WeakKeyDictionary()
)


def base_client() -> AsyncOpenAI:
    """The shared client of the running event loop (created on first use)."""
    loop = asyncio.get_running_loop()
    client = _base_clients.get(loop)
    if client is None:
        from openai import AsyncOpenAI, DefaultAsyncHttpxClient, Omit

        # An explicit HTTP client (openai's defaults) instead of the one AsyncOpenAI would make:
        # that one's finalizer schedules ``aclose()`` on whatever loop runs when it is garbage
        # collected, which fails noisily once this client's own loop has closed.
        client = AsyncOpenAI(
            api_key=NO_API_KEY,
            base_url=_UNBOUND_URL,
            max_retries=0,
            http_client=DefaultAsyncHttpxClient(),
            # AsyncOpenAI reads these from OPENAI_ORG_ID / OPENAI_PROJECT_ID; they identify the
            # user's OpenAI account and have no business reaching the policy endpoint. ``Omit``
            # removes a header (openai's documented idiom; its annotation says ``str`` only).
            default_headers=cast(
                "dict[str, str]", {"OpenAI-Organization": Omit(), "OpenAI-Project": Omit()}
            ),
        )
        _base_clients[loop] = client
    return client


def policy_client(
    base_url: str,
    api_key: str | None,
    *,
    timeout: float | None = None,
    max_retries: int = 0,
) -> AsyncOpenAI:
    """A client bound to one rollout's policy endpoint, sharing the loop's connection pool."""
    options: dict[str, object] = {
        "base_url": base_url,
        "api_key": api_key or NO_API_KEY,
        "max_retries": max_retries,
    }
    if timeout is not None:
        options["timeout"] = timeout
    return base_client().with_options(**options)  # type: ignore[arg-type]


async def aclose_policy_client() -> None:
    """Close the running loop's base client (e.g. at worker shutdown); the next call makes a new one."""
    loop = asyncio.get_running_loop()
    client = _base_clients.pop(loop, None)
    if client is not None:
        await client.close()
