"""Run a judge coroutine from synchronous code."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from osmosis_ai.errors import ConfigurationError
from osmosis_ai.eval.judge.transport import aclose_clients


def run_sync[T](coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on a fresh event loop and close its judge client afterwards."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coro.close()
        raise ConfigurationError(
            "the synchronous judge cannot run inside a running event loop; "
            "use 'await evaluate_rubric(...)' (or 'await judge.score(...)') there"
        )

    async def main() -> T:
        try:
            return await coro
        finally:
            await aclose_clients()

    return asyncio.run(main())
