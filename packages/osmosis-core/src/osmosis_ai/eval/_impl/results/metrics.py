"""Run metrics: reward statistics, pass rate at a threshold, unbiased pass@k.

Why failures are kept out of the reward numbers: a rollout that failed (a timeout, a policy
HTTP error, a crashed server, an exception in the agent, or the grader's LLM judge failing)
produced no reward. Counting it as reward 0 would make an outage look like a bad model. Failures
are therefore reported by category next to the statistics, never inside them: ``reward_stats``
and ``pass_rate`` are over *graded* items only, and pass@k is over each row's graded attempts.
``failed = agent_failures + judge_failures + infrastructure_failures``. The graders' judge usage
(calls, tokens, latency, cost) is totalled under ``judge``, apart from the policy's
``tokens_used``.

pass@k uses the unbiased estimator of Chen et al. (2021): for a row with ``n`` graded attempts of
which ``c`` passed, ``pass@k = 1 - C(n-c, k) / C(n, k)``, averaged over the rows that have at
least ``k`` graded attempts; k runs over 1, 2, 4, ... and the samples per row ``n`` itself.
"""

from __future__ import annotations

import math
import statistics
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from osmosis_ai.eval._impl.cost.pricing import CostTotals
from osmosis_ai.judge_usage import JudgeTotals

#: Error types that blame the rollout's own code; every other failure is infrastructure, except
#: ``judge_error`` (the grader's LLM judge failed), which is counted on its own.
AGENT_FAILURE_TYPES = frozenset({"agent_error", "validation_error"})
JUDGE_FAILURE_TYPE = "judge_error"


@dataclass(frozen=True, slots=True)
class ItemResult:
    """The terminal result of one work item (one row, one sample index)."""

    row_index: int
    run_index: int
    status: str  # "success" | "failed" | "skipped"
    reward: float | None = None
    tokens: int = 0
    error_type: str | None = None
    judge: Mapping[str, Any] | None = None  # the row's LLM-judge usage (judge_usage)
    cost: Mapping[str, Any] | None = None  # the row's cost object (_pricing.row_cost)
    metrics: Mapping[str, Any] | None = None  # the grader's metrics (ctx.sample.metrics)

    @classmethod
    def of_row(cls, r: Any) -> ItemResult:
        """The result a :class:`~osmosis_ai.eval.RowRecord` records (finalize and regrade)."""
        return cls(
            r.row_index,
            r.run_index,
            r.status,
            r.reward,
            r.tokens,
            r.error_type,
            r.judge,
            r.cost,
            r.metrics,
        )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased probability that at least one of ``k`` draws from ``n`` attempts passed."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    # 1 - prod_{i=n-c+1}^{n} (1 - k/i): numerically stable form of 1 - C(n-c,k)/C(n,k).
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def k_values(n: int) -> list[int]:
    """1, 2, 4, ... below ``n``, and ``n`` itself (pass@n: did any sample of the row pass)."""
    ks: list[int] = []
    k = 1
    while k < n:
        ks.append(k)
        k *= 2
    return [*ks, n] if n >= 1 else ks


def reward_stats(rewards: Sequence[float]) -> dict[str, float | None]:
    """mean, median, population std, min, max (all ``None`` when nothing was graded)."""
    if not rewards:
        return {"mean": None, "median": None, "std": None, "min": None, "max": None}
    return {
        "mean": statistics.fmean(rewards),
        "median": statistics.median(rewards),
        "std": statistics.pstdev(rewards) if len(rewards) > 1 else 0.0,
        "min": min(rewards),
        "max": max(rewards),
    }


@dataclass(frozen=True, slots=True)
class RunFigures:
    """A run's figures, typed: the one reader of the ``summary`` block :func:`compute_metrics`
    writes (``metrics.json``). A run just made (``EvalRun.figures``) and a run read from disk
    (``RunHeader.figures``) both hand out this; their ``mean_reward``/``pass_rate`` read it.
    A figure missing (no ``metrics.json`` yet) or of the wrong type (an old or hand-edited file)
    reads as ``None`` (or empty).
    """

    total_samples: int | None = None
    graded: int | None = None
    passed: int | None = None
    failed: int | None = None
    skipped: int | None = None
    mean_reward: float | None = None
    median_reward: float | None = None
    reward_std: float | None = None
    min_reward: float | None = None
    max_reward: float | None = None
    #: Passed / graded (``None`` when nothing was graded); failures are never reward 0.
    pass_rate: float | None = None
    pass_threshold: float | None = None
    #: ``{"k", "value", "rows"}`` per k = 1, 2, 4, ..., n (only with ``n >= 2``).
    pass_at_k: tuple[Mapping[str, Any], ...] = ()
    tokens_used: int | None = None
    failures_by_type: Mapping[str, int] = field(default_factory=dict)
    #: Per grader metric: ``{"n", "mean", "ci95", "min", "max", "threshold"?, "pass_rate"?}``.
    grader_metrics: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: The run's cost in USD (``None``: not priced, or some row's price unknown).
    cost_usd: float | None = None

    @classmethod
    def of(cls, summary: Mapping[str, Any]) -> RunFigures:
        stats = summary.get("reward_stats")
        stats = stats if isinstance(stats, Mapping) else {}
        by_type = summary.get("failures_by_type")
        points = summary.get("pass_at_k")
        per_metric = summary.get("grader_metrics")
        cost = summary.get("cost")
        return cls(
            total_samples=_int(summary.get("total_samples")),
            graded=_int(summary.get("graded")),
            passed=_int(summary.get("passed")),
            failed=_int(summary.get("failed")),
            skipped=_int(summary.get("skipped")),
            mean_reward=_float(stats.get("mean")),
            median_reward=_float(stats.get("median")),
            reward_std=_float(stats.get("std")),
            min_reward=_float(stats.get("min")),
            max_reward=_float(stats.get("max")),
            pass_rate=_float(summary.get("pass_rate")),
            pass_threshold=_float(summary.get("pass_threshold")),
            pass_at_k=tuple(p for p in points if isinstance(p, Mapping))
            if isinstance(points, list)
            else (),
            tokens_used=_int(summary.get("tokens_used")),
            failures_by_type=dict(by_type) if isinstance(by_type, Mapping) else {},
            grader_metrics={str(k): v for k, v in per_metric.items() if isinstance(v, Mapping)}
            if isinstance(per_metric, Mapping)
            else {},
            cost_usd=_float(cost.get("total_usd")) if isinstance(cost, Mapping) else None,
        )


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def compute_metrics(
    results: Iterable[ItemResult],
    *,
    samples_per_row: int,
    pass_threshold: float,
    total_work_items: int | None = None,
    metric_thresholds: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """The ``summary`` block of ``metrics.json`` (also the envelope's ``metrics``)."""
    totals = MetricTotals(
        samples_per_row=samples_per_row,
        pass_threshold=pass_threshold,
        metric_thresholds=metric_thresholds,
    )
    for item in results:
        totals.add(item)
    return totals.summary(total_work_items)


class MetricTotals:
    """:func:`compute_metrics` one item at a time, for a finalisation that streams its rows.

    Held per item, because a figure needs them all: each graded reward (8 bytes: the median),
    each numeric grader metric of a graded item (8 bytes per metric: its interval), and per
    dataset row its graded and passed counts (pass@k) until :meth:`close_row` says the row has
    all its samples: then they join a count per ``(graded, passed)`` pair, so a caller that
    closes its rows (a finalisation does) holds at most ``(n + 1) ** 2`` of them whatever the
    number of rows. Everything else is a running count or total, added in the order
    :func:`compute_metrics` adds them, so the figures are the same to the bit (pass@k is a
    ``math.fsum``, exact whatever the order of its terms).
    """

    def __init__(
        self,
        *,
        samples_per_row: int,
        pass_threshold: float,
        metric_thresholds: Mapping[str, float] | None = None,
    ) -> None:
        self.samples_per_row = samples_per_row
        self.pass_threshold = pass_threshold
        self.metric_thresholds = metric_thresholds or {}
        self.items = 0
        self.failed = 0
        self.skipped = 0
        self.tokens = 0
        self.passed = 0
        self.rewards: array[float] = array("d")
        self.by_type: Counter[str] = Counter()
        self.judge = JudgeTotals()
        self.cost = CostTotals()
        self.metric_values: dict[str, array[float]] = {}
        #: row_index -> (graded, passed), for the rows not closed yet
        self.per_row: dict[int, tuple[int, int]] = {}
        #: (graded, passed) -> how many closed rows have those counts
        self.closed_rows: Counter[tuple[int, int]] = Counter()

    def add(self, r: ItemResult) -> None:
        self.items += 1
        self.tokens += r.tokens
        self.judge.add(r.judge)
        self.cost.add(r.cost)
        if r.status == "failed":
            self.failed += 1
            self.by_type[r.error_type or "rollout_failed"] += 1
        elif r.status == "skipped":
            self.skipped += 1
        if r.status != "success" or r.reward is None:
            return
        reward = float(r.reward)
        self.rewards.append(reward)
        passed = reward >= self.pass_threshold
        self.passed += passed
        graded, hits = self.per_row.get(r.row_index, (0, 0))
        self.per_row[r.row_index] = (graded + 1, hits + passed)
        for key, value in grader_metric_values(r.metrics).items():
            series = self.metric_values.get(key)
            if series is None:
                series = self.metric_values[key] = array("d")
            series.append(value)

    def close_row(self, row_index: int) -> None:
        """Every sample of dataset row ``row_index`` has been added: keep only its counts'
        pair (a row added after it is closed would count as a second row)."""
        counts = self.per_row.pop(row_index, None)
        if counts is not None:
            self.closed_rows[counts] += 1

    def summary(self, total_work_items: int | None = None) -> dict[str, Any]:
        graded = len(self.rewards)
        by_type = self.by_type
        agent_failures = sum(v for k, v in by_type.items() if k in AGENT_FAILURE_TYPES)
        judge_failures = by_type.get(JUDGE_FAILURE_TYPE, 0)
        summary: dict[str, Any] = {
            "total_work_items": total_work_items if total_work_items is not None else self.items,
            "total_samples": self.items,
            "completed_samples": self.items - self.skipped,
            "graded": graded,
            "passed": self.passed,
            "failed": self.failed,
            "skipped": self.skipped,
            "agent_failures": agent_failures,
            "judge_failures": judge_failures,
            "infrastructure_failures": self.failed - agent_failures - judge_failures,
            "failures_by_type": dict(sorted(by_type.items())),
            "pass_rate": self.passed / graded if graded else None,
            "pass_threshold": self.pass_threshold,
            "tokens_used": self.tokens,
            "reward_stats": reward_stats(self.rewards),
            "n_runs": self.samples_per_row,
        }
        judge = self.judge.result()
        if judge is not None:
            summary["judge"] = judge  # the graders' judge calls; tokens_used is the policy's only
        cost = self.cost.result()
        if cost is not None:
            summary["cost"] = cost  # policy, judge and total USD (None: some row's price unknown)
        per_metric = _metric_stats(self.metric_values, self.metric_thresholds)
        if per_metric:
            summary["grader_metrics"] = per_metric
        if self.samples_per_row >= 2:
            rows = [*self.closed_rows.elements(), *self.per_row.values()]
            summary["pass_at_k"] = _pass_at_k_points(rows, self.samples_per_row)
        return summary


def grader_metric_values(metrics: Mapping[str, Any] | None) -> dict[str, float]:
    """The numeric grader metrics of one row (booleans as 0/1); the ``judge_*`` usage figures
    the engine adds are the row's ``judge`` object, not scores."""
    if not metrics:
        return {}
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if key.startswith("judge_") or not isinstance(value, int | float):
            continue
        if math.isfinite(value):
            out[key] = float(value)
    return out


def grader_metric_stats(
    graded: Iterable[ItemResult], thresholds: Mapping[str, float]
) -> dict[str, dict[str, Any]]:
    """Per numeric grader metric, over the graded rows that report it: ``n``, ``mean``,
    ``ci95`` (Student-t, clipped to the score range: ``[0, 1]`` widened to the values), ``min``, ``max``, and ``pass_rate``
    with its ``threshold`` when ``[evaluation] metric_thresholds`` names the metric."""
    values: dict[str, list[float]] = defaultdict(list)
    for item in graded:
        for key, value in grader_metric_values(item.metrics).items():
            values[key].append(value)
    return _metric_stats(values, thresholds)


def _metric_stats(
    values: Mapping[str, Sequence[float]], thresholds: Mapping[str, float]
) -> dict[str, dict[str, Any]]:
    from osmosis_ai.eval._impl.report.stats import mean_interval, score_range

    out: dict[str, dict[str, Any]] = {}
    for key in sorted(values):
        series = list(values[key])
        low, high = min(series), max(series)
        interval = mean_interval(series, clip=score_range(series))
        assert interval is not None
        figures: dict[str, Any] = {
            "n": len(series),
            "mean": interval.estimate,
            "ci95": [interval.low, interval.high],
            "min": low,
            "max": high,
        }
        threshold = thresholds.get(key)
        if threshold is not None:
            figures["threshold"] = threshold
            figures["pass_rate"] = sum(1 for v in series if v >= threshold) / len(series)
        out[key] = figures
    return out


def _pass_at_k_points(
    per_row: Iterable[tuple[int, int]], samples_per_row: int
) -> list[dict[str, Any]]:
    """pass@k per k over the rows' ``(graded, passed)`` counts."""
    points: list[dict[str, Any]] = []
    rows = list(per_row)
    for k in k_values(samples_per_row):
        values = [pass_at_k(n, c, k) for n, c in rows if n >= k]
        points.append(
            {
                "k": k,
                "value": math.fsum(values) / len(values) if values else None,
                "rows": len(values),
            }
        )
    return points
