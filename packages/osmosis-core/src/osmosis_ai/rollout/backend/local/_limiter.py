"""``ConcurrencyLimiter``: LocalBackend's concurrency slots and their counts (0.3.8's ``limiter``).

``queued`` counts rollouts waiting for a slot, ``running`` those holding one; without a cap
every rollout holds an (unbounded) slot at once, so it counts as running. These counts feed
``health()["concurrency"]``; a rollout's own status lives in the server's progress object.
"""

from __future__ import annotations

import asyncio
from typing import Any


class ConcurrencyLimiter:
    """FIFO slots, at most ``max_concurrent`` held at once (``None``: no cap)."""

    __slots__ = ("_semaphore", "max_concurrent", "queued", "running")

    def __init__(self, *, max_concurrent: int | None) -> None:
        self.max_concurrent = max_concurrent
        self.queued = 0
        self.running = 0
        self._semaphore = asyncio.Semaphore(max_concurrent) if max_concurrent is not None else None

    async def take(self) -> None:
        """Wait for a slot (FIFO); cancellation while waiting leaves the counts unchanged."""
        semaphore = self._semaphore
        if semaphore is not None:
            self.queued += 1
            try:
                await semaphore.acquire()
            finally:
                self.queued -= 1
        self.running += 1

    def give_back(self) -> None:
        """Release a slot taken with :meth:`take`."""
        self.running -= 1
        if self._semaphore is not None:
            self._semaphore.release()

    def acquire(self) -> _Slot:
        """``async with limiter.acquire():`` holds one slot for the block (0.3.8's API)."""
        return _Slot(self)

    def snapshot(self) -> dict[str, int | None]:
        return {
            "max_concurrent": self.max_concurrent,
            "queued": self.queued,
            "running": self.running,
        }


class _Slot:
    __slots__ = ("_limiter",)

    def __init__(self, limiter: ConcurrencyLimiter) -> None:
        self._limiter = limiter

    async def __aenter__(self) -> None:
        await self._limiter.take()

    async def __aexit__(self, *exc_info: Any) -> None:
        self._limiter.give_back()
