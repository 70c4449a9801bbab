"""Per-rollout lifecycle records with bounded retention.

In-flight rollouts are always tracked. Finished ones are kept (status, reward, error message
only — never the sample) so that ``rollout_status`` and ``cancel_rollouts`` can answer for them,
but at most ``retention_max`` of them and none older than ``retention_sec``: memory stays flat
however many rollouts a long-lived server runs. Pruning is amortised O(1) per finished rollout.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from osmosis_ai.rollout.types.enums import RolloutStatus

DEFAULT_RETENTION_SEC = 900.0
DEFAULT_RETENTION_MAX = 10_000


@dataclass(slots=True)
class RolloutRecord:
    status: RolloutStatus
    task: asyncio.Task[Any] | None
    cancel_requested: bool = False
    cancel_disposition: str = ""
    holds_slot: bool = False
    reward: float | None = None
    err_message: str | None = None
    finished_at: float = 0.0

    def as_status(self) -> dict[str, Any]:
        if self.status.is_terminal:
            return {
                "status": str(self.status),
                "reward": self.reward,
                "err_message": self.err_message,
            }
        return {"status": str(self.status)}


class RolloutRegistry:
    """In-flight and recently finished rollouts of one backend (event-loop thread only)."""

    def __init__(
        self,
        *,
        retention_sec: float = DEFAULT_RETENTION_SEC,
        retention_max: int = DEFAULT_RETENTION_MAX,
    ) -> None:
        if retention_sec < 0:
            raise ValueError("status_retention_sec must be >= 0 (0 keeps no finished rollouts)")
        if retention_max < 0:
            raise ValueError("status_retention_max must be >= 0 (0 keeps no finished rollouts)")
        self.retention_sec = retention_sec
        self.retention_max = retention_max
        self.active: dict[str, RolloutRecord] = {}
        self.finished: OrderedDict[str, RolloutRecord] = OrderedDict()
        self.queued = 0
        self.grading = 0

    def get(self, rollout_id: str) -> RolloutRecord | None:
        record = self.active.get(rollout_id)
        if record is not None:
            return record
        self.prune()
        return self.finished.get(rollout_id)

    def finish(self, rollout_id: str, record: RolloutRecord) -> None:
        self.active.pop(rollout_id, None)
        record.task = None
        record.finished_at = time.monotonic()
        if self.retention_max and self.retention_sec:
            self.finished.pop(rollout_id, None)
            self.finished[rollout_id] = record
        self.prune(record.finished_at)

    def prune(self, now: float | None = None) -> None:
        finished = self.finished
        if not finished:
            return
        cutoff = (time.monotonic() if now is None else now) - self.retention_sec
        while finished:
            oldest = next(iter(finished.values()))
            if len(finished) > self.retention_max or oldest.finished_at <= cutoff:
                finished.popitem(last=False)
            else:
                break
