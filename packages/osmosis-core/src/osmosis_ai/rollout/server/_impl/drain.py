"""Graceful drain: refuse new rollouts, keep answering until nothing is left to fetch or the
grace period ends, then cancel what still runs (with the documented drain message).

:class:`Drain` is a collaborator of :class:`~.service.RolloutService` with its own state
(whether rollouts are accepted, the drain's deadline, the "something settled" event); what it
needs from the service (cancel an execution, force a result) it is given as callables.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from osmosis_ai.rollout.server._impl.entry import RolloutEntry, wake
from osmosis_ai.rollout.server._impl.polling import ForceResult, Leases
from osmosis_ai.rollout.types.enums import RolloutStatus

if TYPE_CHECKING:
    from osmosis_ai.rollout.server._impl.settings import ServerSettings

logger = logging.getLogger("osmosis_ai.rollout.server")

DRAIN_MESSAGE = (
    "cancelled: the rollout server shut down before the rollout finished "
    "(drain grace period of {grace:g}s elapsed)"
)


class Drain:
    """Admission's on/off switch and the shutdown drain of the rollouts in ``entries``."""

    def __init__(
        self,
        settings: ServerSettings,
        entries: dict[str, RolloutEntry],
        restored: set[str],
        *,
        cancel_execution: Callable[[RolloutEntry], str],
        force_result: ForceResult,
        leases: Leases,
    ) -> None:
        self._entries = entries
        self._restored = restored  # results restored at start: they stay in the outbox
        self._grace_sec = settings.drain_grace_sec
        self._cleanup_sec = settings.cancel_cleanup_sec
        self._cancel_execution = cancel_execution
        self._force_result = force_result
        self._leases = leases
        self.accepting = True
        self.deadline: float | None = None
        self.settling = asyncio.Event()  # set whenever a result finishes or is received
        self.loop: asyncio.AbstractEventLoop | None = None  # the service's, once started

    def begin(self) -> None:
        """Stop admitting (503) and wake every long poll so pollers see the current status."""
        if not self.accepting:
            return
        self.accepting = False
        loop = self.loop or asyncio.get_running_loop()
        self.deadline = self._leases.wait_until = loop.time() + self._grace_sec
        logger.info("rollout server is draining: new rollouts are refused with 503")
        for entry in self._entries.values():
            if not entry.finished:
                wake(entry.progress)

    def settled(self) -> bool:
        """Nothing is left to run, deliver or fetch (results restored at start excepted: they
        stay in the outbox for the next start)."""
        for entry in self._entries.values():
            if not entry.finished or entry.callbacks:
                return False
            if entry.uses_lease and not entry.fetched and entry.rollout_id not in self._restored:
                return False
        return True

    async def drained(self) -> None:
        """Return once :meth:`settled` or the drain grace period is over (the listener stays
        open meanwhile, so pollers fetch what finishes inside it)."""
        self.begin()
        loop = self.loop or asyncio.get_running_loop()
        deadline = self.deadline or loop.time()
        changed = self.settling
        while not self.settled() and loop.time() < deadline:
            changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout_at(deadline):
                    await changed.wait()

    async def drain_executions(self) -> None:
        """Wait ``drain_grace_sec`` for running rollouts, then cancel them (and, past
        ``cancel_cleanup_sec``, report the ones that would not stop as cancelled)."""
        grace = self._grace_sec
        loop = self.loop or asyncio.get_running_loop()
        left = max((self.deadline or loop.time()) - loop.time(), 0.0)
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
        for entry in list(self._entries.values()):
            if not entry.finished and entry.task is not None and not entry.task.done():
                entry.cancel_message = message
                self._cancel_execution(entry)
        await asyncio.wait(running, timeout=self._cleanup_sec)
        for entry in list(self._entries.values()):
            if not entry.finished:
                logger.error(
                    "rollout %s did not stop within %.0fs of being cancelled; reporting it "
                    "as cancelled",
                    entry.rollout_id,
                    self._cleanup_sec,
                )
                self._force_result(entry, RolloutStatus.CANCELLED, message, None)
                if entry.task is not None:
                    entry.task.cancel()

    def _running_tasks(self) -> set[asyncio.Task[None]]:
        return {e.task for e in self._entries.values() if e.task is not None and not e.task.done()}
