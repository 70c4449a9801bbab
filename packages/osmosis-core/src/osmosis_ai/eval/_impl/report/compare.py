"""Run A versus run B on the same rows: flips, per-row deltas, a paired interval.

Rows are matched by (source row, sample index), so two runs over different ``--rows``
selections still pair up on the rows they share. Definitions (also in docs/reading-results.md):

* a row *flipped* when it was graded in both runs and passed in exactly one of them
  (``pass→fail`` is a regression, ``fail→pass`` an improvement), each run judged at its own
  pass threshold;
* a row whose *status changed* was graded in one run and failed or skipped in the other:
  not a flip (an infrastructure error says nothing about the model), listed separately;
* the mean difference ``B - A`` and its paired-bootstrap 95 % interval are over rows graded
  in both runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from osmosis_ai.eval._impl.report.run_data import RunData, outcome, row_key
from osmosis_ai.eval._impl.report.stats import Interval, paired_bootstrap
from osmosis_ai.eval._impl.results.metrics import grader_metric_values
from osmosis_ai.eval._impl.results.reproducibility import reproducibility_differences
from osmosis_ai.eval._impl.run_dir.records import RowRecord


@dataclass(frozen=True, slots=True)
class RowPair:
    key: tuple[int, int]  # (source_row_index, run_index)
    a: RowRecord | None
    b: RowRecord | None
    outcome_a: str | None
    outcome_b: str | None

    @property
    def delta(self) -> float | None:
        if self.a is None or self.b is None or self.a.reward is None or self.b.reward is None:
            return None
        if self.a.status != "success" or self.b.status != "success":
            return None
        return self.b.reward - self.a.reward

    @property
    def change(self) -> str:
        """``regressed`` / ``improved`` (flips), ``status_changed``, ``same``, ``only_a/b``."""
        if self.a is None:
            return "only_b"
        if self.b is None:
            return "only_a"
        graded = {"pass", "fail"}
        if self.outcome_a in graded and self.outcome_b in graded:
            if self.outcome_a == self.outcome_b:
                return "same"
            return "regressed" if self.outcome_a == "pass" else "improved"
        return "same" if self.outcome_a == self.outcome_b else "status_changed"

    def as_dict(self) -> dict[str, Any]:
        return {
            "source_row_index": self.key[0],
            "run_index": self.key[1],
            "change": self.change,
            "outcome_a": self.outcome_a,
            "outcome_b": self.outcome_b,
            "reward_a": self.a.reward if self.a else None,
            "reward_b": self.b.reward if self.b else None,
            "delta": self.delta,
            "row_index_a": self.a.row_index if self.a else None,
            "row_index_b": self.b.row_index if self.b else None,
            "prompt": next((r.prompt for r in (self.a, self.b) if r is not None), None),
            "label": _label(self.a, self.b),
            "answer_a": self.a.answer if self.a else None,
            "answer_b": self.b.answer if self.b else None,
            "cost_a_usd": self.a.cost_usd if self.a else None,
            "cost_b_usd": self.b.cost_usd if self.b else None,
        }


def _label(a: RowRecord | None, b: RowRecord | None) -> str | None:
    return next((r.label for r in (a, b) if r is not None and r.label is not None), None)


_ORDER = {"regressed": 0, "improved": 1, "status_changed": 2, "same": 3, "only_a": 4, "only_b": 5}


@dataclass(frozen=True, slots=True)
class RunComparison:
    a: RunData
    b: RunData
    pairs: list[RowPair]  # flips first, then status changes, then by |delta| descending
    mean_difference: Interval | None  # B - A over rows graded in both
    #: Per grader metric both runs report: B - A over the rows graded in both that have it.
    metric_differences: dict[str, Interval] = field(default_factory=dict)

    @property
    def cost_difference_usd(self) -> float | None:
        """Run B's cost minus run A's (``None`` when either was not fully priced)."""
        a, b = self.a.header.figures.cost_usd, self.b.header.figures.cost_usd
        return None if a is None or b is None else b - a

    def count(self, change: str) -> int:
        return sum(1 for p in self.pairs if p.change == change)

    @property
    def flipped(self) -> list[RowPair]:
        return [p for p in self.pairs if p.change in ("regressed", "improved")]

    def summary(self) -> dict[str, Any]:
        interval = self.mean_difference
        return {
            "run_a": self.a.header.name,
            "run_b": self.b.header.name,
            "paired_rows": sum(1 for p in self.pairs if p.a is not None and p.b is not None),
            "graded_in_both": interval.n if interval else 0,
            "regressed": self.count("regressed"),
            "improved": self.count("improved"),
            "status_changed": self.count("status_changed"),
            "only_a": self.count("only_a"),
            "only_b": self.count("only_b"),
            "mean_difference": interval.as_dict() if interval else None,
            "metric_differences": {k: v.as_dict() for k, v in self.metric_differences.items()},
            "cost_a_usd": self.a.header.figures.cost_usd,
            "cost_b_usd": self.b.header.figures.cost_usd,
            "cost_difference_usd": self.cost_difference_usd,
            # B (or A) made by `eval regrade` of the other: the flips are the grader change's.
            "regraded_from": self.b.header.regraded_from or self.a.header.regraded_from,
            # What differs in how the two runs were made (versions, model, sampling, seeds,
            # fingerprints, dataset, code): each one is a reason a difference may not be the
            # change under test.
            "reproducibility_differences": reproducibility_differences(
                self.a.header.reproducibility, self.b.header.reproducibility
            ),
        }


def compare_runs(a: RunData, b: RunData) -> RunComparison:
    """Pair ``a`` and ``b`` row by row (see the module docstring)."""
    rows_a = {row_key(r): r for r in a.rows}
    rows_b = {row_key(r): r for r in b.rows}
    pairs: list[RowPair] = []
    for key in sorted(set(rows_a) | set(rows_b)):
        ra, rb = rows_a.get(key), rows_b.get(key)
        pairs.append(
            RowPair(
                key=key,
                a=ra,
                b=rb,
                outcome_a=outcome(ra, a.header.pass_threshold) if ra else None,
                outcome_b=outcome(rb, b.header.pass_threshold) if rb else None,
            )
        )
    diffs = [d for d in (p.delta for p in pairs) if d is not None and math.isfinite(d)]
    pairs.sort(key=lambda p: (_ORDER[p.change], -abs(p.delta or 0.0), p.key))
    return RunComparison(
        a=a,
        b=b,
        pairs=pairs,
        mean_difference=paired_bootstrap(diffs),
        metric_differences=_metric_differences(pairs),
    )


def _metric_differences(pairs: list[RowPair]) -> dict[str, Interval]:
    """Per grader metric: the paired-bootstrap interval of B - A over rows graded in both."""
    per_key: dict[str, list[float]] = {}
    for pair in pairs:
        if pair.delta is None or pair.a is None or pair.b is None:
            continue
        values_a = grader_metric_values(pair.a.metrics)
        values_b = grader_metric_values(pair.b.metrics)
        for key in values_a.keys() & values_b.keys():
            per_key.setdefault(key, []).append(values_b[key] - values_a[key])
    out: dict[str, Interval] = {}
    for key in sorted(per_key):
        interval = paired_bootstrap(per_key[key])
        if interval is not None:
            out[key] = interval
    return out
