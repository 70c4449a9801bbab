"""What a run reports while it progresses: :class:`EvalProgress` counters and :class:`EvalUpdate`.

``run_eval(..., progress=callback)`` calls ``callback(update)`` on the event loop: once when the
session starts (``kind="started"``), after every finished row (``kind="row"``, with its
:class:`~osmosis_ai.eval.RowRecord`) and for notices worth showing (``kind="notice"``: upstream
retries, a halted dispatch, the mock-model warning). Keep the callback quick: it runs on the
controller's event loop. ``update.progress`` is the live counter object; copy what you keep.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from osmosis_ai.eval._impl.run_dir.records import RowRecord

if TYPE_CHECKING:
    from osmosis_ai.eval._impl.adaptive import AdaptiveLimit


@dataclass(slots=True)
class EvalProgress:
    """Live counters of one session of a run."""

    run_name: str
    model: str
    rollout: str
    rows: int  # selected dataset rows
    n: int  # samples per row
    total: int  # work items = rows x n
    already_done: int = 0  # finished in earlier sessions (resume)
    pending_at_start: int = 0
    resumed: bool = False  # the run existed before this session
    succeeded: int = 0
    failed: int = 0
    skipped: int = 0
    reward_sum: float = 0.0
    #: Model calls the rows finished this session made through the policy proxy.
    policy_calls: int = 0
    #: The adaptive limit of model calls in flight (``in_flight``, ``limit``, ``ceiling``), live.
    policy_limit: AdaptiveLimit | None = None

    @property
    def finished_this_session(self) -> int:
        return self.succeeded + self.failed + self.skipped

    @property
    def done(self) -> int:
        """Work items finished, this session and earlier ones."""
        return self.already_done + self.finished_this_session

    @property
    def mean_reward(self) -> float | None:
        """Mean reward of the rows graded this session (failures are not reward 0)."""
        return self.reward_sum / self.succeeded if self.succeeded else None

    def count(self, row: RowRecord) -> None:
        self.policy_calls += row.policy_calls
        if row.status == "success":
            self.succeeded += 1
            self.reward_sum += row.reward or 0.0
        elif row.status == "failed":
            self.failed += 1
        else:
            self.skipped += 1


@dataclass(frozen=True, slots=True)
class EvalUpdate:
    """One progress report; see the module docstring."""

    kind: Literal["started", "row", "notice"]
    progress: EvalProgress
    row: RowRecord | None = None
    level: str | None = None  # notices: "info" | "warning" | "error"
    message: str | None = None  # notices: e.g. "upstream_retry", "dispatch halted"
    details: Mapping[str, Any] = field(default_factory=dict)


ProgressCallback = Callable[[EvalUpdate], None]
