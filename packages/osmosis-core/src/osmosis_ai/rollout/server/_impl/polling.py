"""Leases and long polls: a polling lease runs out when its controller stops polling (the
rollout then fails with ``lease_expired`` and its execution is cancelled), each poll renews it,
and ``GET /rollout/{id}/result`` waits up to ``result_wait_timeout_sec`` for the next change.

:class:`Leases` is a collaborator of :class:`~.service.RolloutService`: it keeps each admitted
rollout's lease (the entry's ``lease_deadline`` and ``timer``) and answers polls; what it needs
from the service (force a result, cancel the execution, acknowledge a fetched result) it is
given as callables. Same event loop, no locks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from osmosis_ai.rollout.server._impl import wire
from osmosis_ai.rollout.server._impl.entry import RolloutEntry
from osmosis_ai.rollout.server._impl.lease import lease_matches
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus

if TYPE_CHECKING:
    from osmosis_ai.rollout.server._impl.settings import ServerSettings

logger = logging.getLogger("osmosis_ai.rollout.server")

LEASE_EXPIRED_MESSAGE = "polling lease expired"
_FIRST_POLL_WAIT_SEC = 0.25
_QUEUED = RolloutStatus.QUEUED


ForceResult = Callable[[RolloutEntry, RolloutStatus, str | None, RolloutErrorCategory | None], None]


class Leases:
    """Polling leases and long polls of the admitted rollouts in ``entries``."""

    def __init__(
        self,
        settings: ServerSettings,
        entries: dict[str, RolloutEntry],
        *,
        force_result: ForceResult,
        cancel_execution: Callable[[RolloutEntry], str],
        acknowledge: Callable[[RolloutEntry], None],
    ) -> None:
        self._entries = entries
        self._timeout_sec = settings.polling_lease_timeout_sec
        self._wait_sec = settings.result_wait_timeout_sec
        self._force_result = force_result
        self._cancel_execution = cancel_execution
        self._acknowledge = acknowledge
        self.loop: asyncio.AbstractEventLoop | None = None  # the service's, once started
        #: The drain's end (loop time) once a drain began: no poll waits past it, so the
        #: listener closes when the grace period ends, not a full poll wait later.
        self.wait_until: float | None = None

    def arm(self, entry: RolloutEntry, loop: asyncio.AbstractEventLoop) -> None:
        """Start ``entry``'s lease at admission: it runs out ``polling_lease_timeout_sec`` from
        now unless a poll renews it."""
        entry.lease_deadline = loop.time() + self._timeout_sec
        entry.timer = loop.call_at(entry.lease_deadline, self._check, entry)

    def renew(self, entry: RolloutEntry) -> None:
        """A repeated admission renews the lease of a rollout still running."""
        if not entry.finished:
            loop = self.loop or asyncio.get_running_loop()
            entry.lease_deadline = loop.time() + self._timeout_sec

    def _check(self, entry: RolloutEntry) -> None:
        if entry.finished or self._entries.get(entry.rollout_id) is not entry:
            return
        loop = self.loop or asyncio.get_running_loop()
        if loop.time() < entry.lease_deadline:
            entry.timer = loop.call_at(entry.lease_deadline, self._check, entry)
            return
        entry.timer = None
        self._expire(entry)

    def _expire(self, entry: RolloutEntry) -> None:
        logger.warning(
            "polling lease of rollout %s expired (no poll for %.0fs); cancelling it",
            entry.rollout_id,
            self._timeout_sec,
        )
        self._force_result(
            entry, RolloutStatus.FAILURE, LEASE_EXPIRED_MESSAGE, RolloutErrorCategory.LEASE_EXPIRED
        )
        self._cancel_execution(entry)

    def matches(self, entry: RolloutEntry, token: str) -> bool:
        return lease_matches(token, entry.lease_digest)

    def _fetched(self, entry: RolloutEntry) -> bytes:
        if not entry.fetched:
            entry.fetched = True
            self._acknowledge(entry)
        return entry.result

    async def poll(self, entry: RolloutEntry) -> bytes:
        """Answer one long poll (token already checked)."""
        if entry.finished:
            return self._fetched(entry)
        loop = self.loop or asyncio.get_running_loop()
        if entry.uses_lease:
            now = loop.time()
            if now >= entry.lease_deadline:
                self._expire(entry)
                return self._fetched(entry)
            entry.lease_deadline = now + self._timeout_sec
        wait = self._wait_sec
        if not entry.polled:
            entry.polled = True
            if entry.progress.status != _QUEUED:
                # The controller has only seen "queued" (from admission). Wait briefly for the
                # next change (a fast rollout then needs a single poll), but report the unseen
                # progress soon rather than after a full wait.
                wait = min(wait, _FIRST_POLL_WAIT_SEC)
        if self.wait_until is not None:
            wait = max(min(wait, self.wait_until - loop.time()), 0.0)
        event = entry.progress.changed
        try:
            async with asyncio.timeout(wait):
                await event.wait()
        except TimeoutError:
            pass
        if entry.finished:
            return self._fetched(entry)
        return wire.in_progress_json(entry.rollout_id, entry.progress.status)
