"""One admitted rollout as the server keeps it, and the server's own status transitions."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from osmosis_ai.rollout.context import RolloutProgress
from osmosis_ai.rollout.types.enums import RolloutStatus

if TYPE_CHECKING:
    from osmosis_ai.rollout.types.protocol import RolloutInitRequest

logger = logging.getLogger("osmosis_ai.rollout.server")

_QUEUED = RolloutStatus.QUEUED


class AdmissionError(Exception):
    """Admission refused with an HTTP status (503, 429, 409, 500)."""

    def __init__(self, status_code: int, detail: str) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.detail = detail


class RolloutEntry:
    """One registered rollout. After it finishes, only the encoded result and the lease digest
    are kept (the request, sample and task are dropped), so retained results stay small.

    While it runs, ``progress`` is the rollout's one status: the backend moves it to
    ``running``/``grading``, the server to the terminal state.
    """

    __slots__ = (
        "callback_key",
        "callbacks",
        "cancel_disposition",
        "cancel_message",
        "cancel_requested",
        "err_message",
        "fetched",
        "fingerprint",
        "finished",
        "finished_at",
        "journaled",
        "lease_deadline",
        "lease_digest",
        "pending_since",
        "polled",
        "progress",
        "request",
        "result",
        "reward",
        "rollout_id",
        "salt",
        "started",
        "status",
        "task",
        "timer",
        "uses_lease",
    )

    def __init__(self, rollout_id: str, lease_digest: bytes) -> None:
        self.rollout_id = rollout_id
        self.lease_digest = lease_digest
        self.lease_deadline = 0.0
        self.salt = b""
        self.fingerprint = b""
        # Set once the outbox holds this rollout (so forgetting it must be recorded there).
        self.journaled = False
        self.uses_lease = True
        self.request: RolloutInitRequest | None = None
        self.progress = RolloutProgress()
        self.task: asyncio.Task[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.started = False
        self.finished = False
        self.finished_at = 0.0
        # Wall-clock time its callbacks were first journaled (0.0: none): their expiry.
        self.pending_since = 0.0
        self.result: bytes = b""
        self.status = _QUEUED
        self.reward: float | None = None
        self.err_message: str | None = None
        self.fetched = False
        self.polled = False
        self.cancel_disposition: str | None = None
        self.cancel_message: str | None = None
        self.cancel_requested = False
        # 0.3.0 mode: callbacks still to deliver, in order: (phase, url, body).
        self.callbacks: list[tuple[str, str, bytes]] | None = None
        self.callback_key: str | None = None

    @property
    def current_status(self) -> RolloutStatus:
        return self.status if self.finished else self.progress.status


# Shared by every finished entry in place of its own progress object (memory per retained
# result); finished entries answer from ``entry.status``, never from this.
FINISHED = RolloutProgress(status=RolloutStatus.SUCCESS)


def publish(progress: RolloutProgress, status: RolloutStatus) -> None:
    """Synchronous twin of ``RolloutProgress.set_status`` for server-owned transitions (the
    terminal status, and a worker process's reports). The only ``on_status`` the server installs
    is the ownership telemetry's (:mod:`.ownership`), which is synchronous; like
    ``set_status``, an observer that raises is logged and the transition stands."""
    if status == progress.status or progress.status.is_terminal:
        return
    progress.status = status
    wake(progress)
    observer = progress.on_status
    if observer is not None:
        try:
            observer(status)
        except Exception:
            logger.warning("rollout status observer failed on %s", status, exc_info=True)


def wake(progress: RolloutProgress) -> None:
    """Wake every long poll waiting on ``progress`` (and arm a fresh event)."""
    event, progress.changed = progress.changed, asyncio.Event()
    event.set()
