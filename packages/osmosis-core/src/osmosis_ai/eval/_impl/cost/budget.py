"""The cost budget of a run (``--max-cost``): the estimate before dispatch and the admission rule.

The ledger counts every finished work item of the *run* (earlier sessions included: a budget
is for the whole run, so a resumed run does not spend it again). A row's cost is its ``cost``
object's ``total_usd`` (policy + judge, see :mod:`osmosis_ai.eval._impl.cost.pricing`); a row that made no model call
costs 0.

Estimate: the mean cost of the run's priced rows. When the run has none yet, the scheduler runs
one *probe* work item alone first (a real row, whose result is kept) and takes its cost; the
estimate is that per-row cost x the pending work items.

Admission: a new work item starts only while ``spent + (in flight + 1) x per-row estimate`` fits
in the budget; the first refusal stops admission for good. Rows already in flight **finish**
(their calls are already paid for; cancelling them would waste that money and leave nothing to
show for it). So a run stops within about one row's cost of the budget, and overshoots it only
when rows cost more than the rows seen so far. A row whose cost is unknown (no price for the
model) makes the budget unenforceable: admission stops with that reason.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: Probe rows run one at a time before the estimate (more than one only when a probe row spent
#: nothing, e.g. it failed before its first model call).
MAX_PROBE_ROWS = 3


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """What the rest of a run is expected to cost, shown before dispatch (``confirm_cost``)."""

    per_row_usd: float | None  # None: unknown (``reason`` says why)
    pending: int  # work items still to run
    total_usd: float | None  # per_row_usd x pending
    spent_usd: float  # already spent by this run (earlier sessions and the probe)
    max_cost_usd: float | None
    basis: str  # e.g. "1 probe row", "12 earlier rows"
    reason: str | None = None

    def describe(self) -> str:
        """One line for a prompt or a log."""
        if self.total_usd is None or self.per_row_usd is None:
            return f"cost estimate unknown ({self.reason or 'no priced row'})"
        text = (
            f"estimated cost of the {self.pending} pending work item(s): ${self.total_usd:.4f} "
            f"(${self.per_row_usd:.6f} per row from {self.basis}; ${self.spent_usd:.4f} spent so far)"
        )
        if self.max_cost_usd is not None:
            text += f"; budget ${self.max_cost_usd:.4f}"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "per_row_usd": self.per_row_usd,
            "pending": self.pending,
            "total_usd": self.total_usd,
            "spent_usd": self.spent_usd,
            "max_cost_usd": self.max_cost_usd,
            "basis": self.basis,
            "reason": self.reason,
        }


def _row_usd(cost: Mapping[str, Any] | None) -> tuple[float | None, str | None]:
    """A finished row's spend, or ``None`` with the reason it is unknown."""
    if not cost:
        return 0.0, None  # no model call, no judge call
    total = cost.get("total_usd")
    if isinstance(total, int | float) and math.isfinite(total):
        return float(total), None
    return None, str(cost.get("unknown_reason") or "the row's cost is unknown")


@dataclass(slots=True)
class Budget:
    """The run's ledger and the admission rule of the module docstring."""

    limit_usd: float | None
    spent_usd: float = 0.0
    priced_rows: int = 0  # finished rows that spent something
    prior_rows: int = 0  # of which from earlier sessions
    in_flight: int = 0
    unknown_reason: str | None = None
    stopped: bool = False
    estimate: CostEstimate | None = None

    @classmethod
    def from_prior(
        cls, limit_usd: float | None, costs: Iterable[Mapping[str, Any] | None]
    ) -> Budget:
        """Seed the ledger with the rows finished in earlier sessions."""
        budget = cls(limit_usd)
        for cost in costs:
            budget._add(cost)
        budget.prior_rows = budget.priced_rows
        return budget

    @property
    def per_row_usd(self) -> float | None:
        return self.spent_usd / self.priced_rows if self.priced_rows else None

    @property
    def exhausted(self) -> bool:
        return self.limit_usd is not None and self.spent_usd >= self.limit_usd

    def make_estimate(self, pending: int, probes: int) -> CostEstimate:
        per_row = None if self.unknown_reason else self.per_row_usd
        basis = f"{probes} probe row(s)" if probes else f"{self.prior_rows} earlier row(s)"
        if probes and self.prior_rows:
            basis = f"{self.priced_rows} finished row(s)"
        self.estimate = CostEstimate(
            per_row_usd=per_row,
            pending=pending,
            total_usd=None if per_row is None else per_row * pending,
            spent_usd=self.spent_usd,
            max_cost_usd=self.limit_usd,
            basis=basis,
            reason=self.unknown_reason
            or (None if per_row is not None else "no row spent anything yet"),
        )
        return self.estimate

    def admit(self) -> bool:
        """Reserve a slot for one more work item, or refuse (and stay refused)."""
        if self.limit_usd is None:
            self.in_flight += 1
            return True
        if self.stopped or self.unknown_reason is not None or self.exhausted:
            self.stopped = True
            return False
        per_row = self.per_row_usd or 0.0
        if self.spent_usd + (self.in_flight + 1) * per_row > self.limit_usd * (1 + 1e-9):
            self.stopped = True
            return False
        self.in_flight += 1
        return True

    def settle(self, cost: Mapping[str, Any] | None) -> None:
        """A work item admitted by :meth:`admit` (or a probe) finished with this ``cost``."""
        self.in_flight = max(0, self.in_flight - 1)
        self._add(cost)

    def _add(self, cost: Mapping[str, Any] | None) -> None:
        usd, reason = _row_usd(cost)
        if usd is None:
            self.unknown_reason = self.unknown_reason or reason
            return
        self.spent_usd += usd
        if usd > 0:
            self.priced_rows += 1

    def stop_message(self) -> str:
        """Why admission stopped, for the summary and ``halt_reason``."""
        if self.unknown_reason is not None:
            return (
                f"--max-cost cannot be enforced: a row's cost is unknown ({self.unknown_reason}); "
                "the remaining work items were left pending: give the model a price, then rerun "
                "with the same --name and --max-cost to continue (a higher budget does not help)"
            )
        return (
            f"cost budget reached: ${self.spent_usd:.4f} spent of --max-cost "
            f"${self.limit_usd or 0.0:.4f} (the next row would not fit); the remaining work items "
            "were left pending: rerun with the same --name and a higher --max-cost to continue"
        )

    def admission_stop_message(self) -> str:
        """Why no new row starts, said when admission stops: the rows already running still
        finish (and spend), so this is not yet the run's final spend (:meth:`stop_message`)."""
        if self.unknown_reason is not None or self.limit_usd is None:
            return self.stop_message()
        running = self.in_flight
        text = f"no new row starts: ${self.spent_usd:.4f} spent of ${self.limit_usd:.4f}"
        if running and self.per_row_usd is not None:
            text += (
                f"; {running} row(s) still running finish first "
                f"(about ${running * self.per_row_usd:.4f} more)"
            )
        return text

    def to_json(self) -> dict[str, Any]:
        """The ``budget`` block of ``metrics.json``."""
        return {
            "max_cost_usd": self.limit_usd,
            "spent_usd": round(self.spent_usd, 10),
            "per_row_usd": self.per_row_usd,
            "stopped": self.stopped,
            "unknown_reason": self.unknown_reason,
            "estimate": self.estimate.to_json() if self.estimate is not None else None,
        }
