"""Graceful drain: refuse new rollouts, keep answering until nothing is left to fetch or the
grace period ends, then cancel what still runs (with the documented drain message)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from osmosis_ai.rollout.server._impl.entry import RolloutEntry, wake
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus

if TYPE_CHECKING:
    from osmosis_ai.rollout.server._impl.settings import ServerSettings

logger = logging.getLogger("osmosis_ai.rollout.server")

DRAIN_MESSAGE = (
    "cancelled: the rollout server shut down before the rollout finished "
    "(drain grace period of {grace:g}s elapsed)"
)


class DrainingMixin:
    """The drain half of :class:`~.service.RolloutService` (same state, same event loop)."""

    entries: dict[str, RolloutEntry]
    settings: ServerSettings
    accepting: bool
    _loop: asyncio.AbstractEventLoop | None
    _restored: set[str]
    _drain_deadline: float | None
    _settling: asyncio.Event

    # Provided by RolloutService (declared here for the type checker).
    _cancel_execution: Callable[[RolloutEntry], str]
    _finalize_forced: Callable[
        [RolloutEntry, RolloutStatus, str | None, RolloutErrorCategory | None], None
    ]

    def begin_drain(self) -> None:
        """Stop admitting (503) and wake every long poll so pollers see the current status."""
        if not self.accepting:
            return
        self.accepting = False
        loop = self._loop or asyncio.get_running_loop()
        self._drain_deadline = loop.time() + self.settings.drain_grace_sec
        logger.info("rollout server is draining: new rollouts are refused with 503")
        for entry in self.entries.values():
            if not entry.finished:
                wake(entry.progress)

    def settled(self) -> bool:
        """Nothing is left to run, deliver or fetch (results restored at start excepted: they
        stay in the outbox for the next start)."""
        for entry in self.entries.values():
            if not entry.finished or entry.callbacks:
                return False
            if entry.uses_lease and not entry.fetched and entry.rollout_id not in self._restored:
                return False
        return True

    async def drained(self) -> None:
        """Return once :meth:`settled` or the drain grace period is over (the listener stays
        open meanwhile, so pollers fetch what finishes inside it)."""
        self.begin_drain()
        loop = self._loop or asyncio.get_running_loop()
        deadline = self._drain_deadline or loop.time()
        changed = self._settling
        while not self.settled() and loop.time() < deadline:
            changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout_at(deadline):
                    await changed.wait()

    async def _drain_executions(self) -> None:
        """Wait ``drain_grace_sec`` for running rollouts, then cancel them (and, past
        ``cancel_cleanup_sec``, report the ones that would not stop as cancelled)."""
        grace = self.settings.drain_grace_sec
        loop = self._loop or asyncio.get_running_loop()
        left = max((self._drain_deadline or loop.time()) - loop.time(), 0.0)
        running = self._running_tasks()
        if running and left > 0:
            logger.info(
                "waiting up to %gs for %d in-flight rollout(s) to finish", left, len(running)
            )
            await asyncio.wait(running, timeout=left)
        running = self._running_tasks()
        if not running:
            return
        message = DRAIN_MESSAGE.format(grace=grace)
        logger.warning(
            "cancelling %d rollout(s) still running after the grace period", len(running)
        )
        for entry in list(self.entries.values()):
            if not entry.finished and entry.task is not None and not entry.task.done():
                entry.cancel_message = message
                self._cancel_execution(entry)
        await asyncio.wait(running, timeout=self.settings.cancel_cleanup_sec)
        for entry in list(self.entries.values()):
            if not entry.finished:
                logger.error(
                    "rollout %s did not stop within %.0fs of being cancelled; reporting it "
                    "as cancelled",
                    entry.rollout_id,
                    self.settings.cancel_cleanup_sec,
                )
                self._finalize_forced(entry, RolloutStatus.CANCELLED, message, None)
                if entry.task is not None:
                    entry.task.cancel()

    def _running_tasks(self) -> set[asyncio.Task[None]]:
        return {e.task for e in self.entries.values() if e.task is not None and not e.task.done()}
