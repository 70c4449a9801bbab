"""One ``AsyncOpenAI`` client per event loop, and the concurrency limit of each judge endpoint.

Clients are not shared across event loops (their connection pool belongs to the loop that
opened it), so each loop gets its own, created on first use and forgotten with the loop. Calls
to different endpoints or with different keys use ``with_options`` views that share that one
connection pool. The adaptive limit bounding concurrent calls is per loop and per
``(base_url, limit)``, so every judge pointed at one endpoint in one loop shares one bound.
"""

from __future__ import annotations

import asyncio
import hashlib
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from osmosis_ai.eval._impl.adaptive import AdaptiveLimit
    from osmosis_ai.eval.judge.providers import JudgeTarget

#: Concurrent calls per endpoint per event loop unless ``max_concurrency=`` says otherwise.
#: 100 calls of 200 ms take two rounds (~0.4 s) at this bound; providers that rate-limit
#: answer 429, which the judge retries after ``Retry-After``.
DEFAULT_MAX_CONCURRENCY = 64


def require_openai() -> type[AsyncOpenAI]:
    try:
        from openai import AsyncOpenAI
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            "The LLM judge (evaluate_rubric, osmosis_ai.eval.judge) requires the 'openai' "
            "package. Install it with: pip install 'osmosis-ai[rubric]' "
            "(or 'osmosis-core[rubric]')",
            name=exc.name,
        ) from exc
    return AsyncOpenAI


@dataclass
class _LoopState:
    client: AsyncOpenAI
    views: dict[tuple[str, str, float | None], AsyncOpenAI] = field(default_factory=dict)
    limits: dict[tuple[str, int], AdaptiveLimit] = field(default_factory=dict)


_states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
    weakref.WeakKeyDictionary()
)


def _state() -> _LoopState:
    loop = asyncio.get_running_loop()
    state = _states.get(loop)
    if state is None:
        client_cls = require_openai()
        # The judge retries itself (it also retries malformed replies and counts attempts).
        client = client_cls(api_key="unused", base_url="http://127.0.0.1/v1", max_retries=0)
        state = _LoopState(client=client)
        _states[loop] = state
    return state


def client_for(target: JudgeTarget, timeout: float | None) -> AsyncOpenAI:
    """The running loop's client, pointed at ``target``."""
    state = _state()
    key_digest = hashlib.sha256(target.api_key.encode("utf-8")).hexdigest()
    view_key = (target.base_url, key_digest, timeout)
    view = state.views.get(view_key)
    if view is None:
        view = state.client.with_options(
            base_url=target.base_url, api_key=target.api_key, timeout=timeout, max_retries=0
        )
        state.views[view_key] = view
    return view


def limit_for(base_url: str, ceiling: int) -> AdaptiveLimit:
    """The endpoint's adaptive concurrency limit (``ceiling``: ``max_concurrency``) in this loop.

    It backs off on 429/503/timeouts and grows back on success (:mod:`osmosis_ai.eval._impl.adaptive`),
    apart from the policy's limit.
    """
    from osmosis_ai.eval._impl.adaptive import AdaptiveLimit

    state = _state()
    limit = state.limits.get((base_url, ceiling))
    if limit is None:
        limit = AdaptiveLimit(ceiling, name="judge")
        state.limits[(base_url, ceiling)] = limit
    return limit


async def aclose_clients() -> None:
    """Close the running loop's judge client (call it before the loop ends to free sockets)."""
    loop = asyncio.get_running_loop()
    state = _states.pop(loop, None)
    if state is not None:
        await state.client.close()
