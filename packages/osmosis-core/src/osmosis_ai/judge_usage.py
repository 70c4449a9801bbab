"""Judge usage (calls, tokens, latency, cost), recorded apart from the policy's.

Standard library only and below every layer that needs it: the judge
(:mod:`osmosis_ai.eval.judge`) records into it and the grading engines (``LocalBackend``)
collect it per rollout.

Every judge call produces a :class:`JudgeCall`. It is added to the :class:`JudgeUsage` of the
:class:`~osmosis_ai.eval.judge.judge.Judge` that made it and to the usage collected by the
innermost :func:`collect_judge_usage` block around the call (the grading engine opens one per
rollout, so a row's judge spend is reported with the row and never mixed into policy tokens).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class JudgeCall:
    """One logical judge call (all its attempts)."""

    model: str
    provider: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 1
    cached: bool = False
    failed: bool = False
    cost_usd: float | None = None


@dataclass(slots=True)
class JudgeUsage:
    """Totals over many judge calls."""

    calls: int = 0
    cached_calls: int = 0
    failed_calls: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float | None = None
    unpriced_calls: int = 0  # calls that spent tokens on a model with no known price
    models: set[str] = field(default_factory=set)

    def add(self, call: JudgeCall) -> None:
        self.calls += 1
        self.cached_calls += int(call.cached)
        self.failed_calls += int(call.failed)
        self.requests += 0 if call.cached else call.attempts
        self.prompt_tokens += call.prompt_tokens
        self.completion_tokens += call.completion_tokens
        self.latency_s += call.latency_s
        if call.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + call.cost_usd
        elif not call.cached and (call.prompt_tokens or call.completion_tokens):
            self.unpriced_calls += 1
        self.models.add(call.model)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready totals (the shape of ``judge`` in eval records and envelopes)."""
        return {
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "failed_calls": self.failed_calls,
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "latency_s": round(self.latency_s, 6),
            "cost_usd": self.cost_usd,
            "unpriced_calls": self.unpriced_calls,
            "models": sorted(self.models),
        }


_current: ContextVar[JudgeUsage | None] = ContextVar("osmosis_judge_usage", default=None)


@contextlib.contextmanager
def collect_judge_usage() -> Iterator[JudgeUsage]:
    """Collect the usage of every judge call made inside the block (in this context)."""
    usage = JudgeUsage()
    token = _current.set(usage)
    try:
        yield usage
    finally:
        _current.reset(token)


def judge_metrics(usage: JudgeUsage) -> dict[str, float]:
    """The ``judge_*`` sample metrics a grading engine reports for one rollout."""
    metrics: dict[str, float] = {
        "judge_calls": usage.calls,
        "judge_failed_calls": usage.failed_calls,
        "judge_cached_calls": usage.cached_calls,
        "judge_prompt_tokens": usage.prompt_tokens,
        "judge_completion_tokens": usage.completion_tokens,
        "judge_latency_s": round(usage.latency_s, 6),
    }
    if usage.cost_usd is not None:
        metrics["judge_cost_usd"] = usage.cost_usd
    if usage.unpriced_calls:
        metrics["judge_unpriced_calls"] = usage.unpriced_calls
    return metrics


#: The ``judge_*`` metric names, in the order the per-row ``judge`` object lists them.
_METRIC_KEYS = (
    "calls",
    "failed_calls",
    "cached_calls",
    "prompt_tokens",
    "completion_tokens",
    "latency_s",
    "cost_usd",
    "unpriced_calls",
)


def judge_usage_from_metrics(metrics: Mapping[str, Any] | None) -> dict[str, float] | None:
    """The per-row ``judge`` object (``calls``, tokens, ...) read back from ``judge_*`` metrics."""
    if not metrics or not metrics.get("judge_calls"):
        return None
    usage: dict[str, float] = {}
    for key in _METRIC_KEYS:
        value = metrics.get(f"judge_{key}")
        if isinstance(value, int | float) and not isinstance(value, bool):
            usage[key] = value
    return usage


def sum_judge_usage(rows: Iterable[Mapping[str, Any] | None]) -> dict[str, float] | None:
    """Totals of per-row ``judge`` objects (``None`` when no row called a judge)."""
    totals = JudgeTotals()
    for row in rows:
        totals.add(row)
    return totals.result()


class JudgeTotals:
    """:func:`sum_judge_usage` one row at a time (a run's finalisation streams its rows)."""

    __slots__ = ("_totals",)

    def __init__(self) -> None:
        self._totals: dict[str, float] = {}

    def add(self, row: Mapping[str, Any] | None) -> None:
        totals = self._totals
        for key, value in (row or {}).items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                totals[key] = totals.get(key, 0) + value

    def result(self) -> dict[str, float] | None:
        if not self._totals:
            return None
        totals = dict(self._totals)
        totals["total_tokens"] = totals.get("prompt_tokens", 0) + totals.get("completion_tokens", 0)
        return totals


def record_call(call: JudgeCall) -> None:
    """Add ``call`` to the usage being collected around it, if any."""
    usage = _current.get()
    if usage is not None:
        usage.add(call)
