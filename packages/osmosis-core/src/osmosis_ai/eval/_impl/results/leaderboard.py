"""A benchmark leaderboard: per agent pass@1 with a 95 % interval, pass@k, and ranks with ties.

* **pass@k** of one task with ``n`` graded attempts of which ``c`` passed is the unbiased
  estimator ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021, "Evaluating Large Language Models
  Trained on Code"); an agent's pass@k is its mean over the tasks that have at least ``k``
  attempts. pass@1 is then the mean per-task pass rate.
* **95 % interval of pass@1**: the Wilson score interval of the passed attempts over all graded
  attempts (:func:`~osmosis_ai.eval._impl.report.stats.wilson_interval`, the eval report's).
  Chosen because it has a closed form anyone can check by hand, stays inside [0, 1] and is not
  empty at 0 % or 100 % (where a normal interval, or a bootstrap over a handful of tasks,
  collapses to a single point). It treats attempts as independent; with several attempts of
  the same task it is narrower than an interval that resamples whole tasks would be.
* **Ranks and ties**: agents are ordered by pass@1, then pass@k, then name. The best agent's
  interval is ``[L, H]``; every agent whose interval overlaps it (its upper bound is at least
  ``L``) cannot be told apart from the best and shares rank 1 (``tied: true``, as is the best
  when it has such company). Any other agent gets standard competition ranking by pass@1:
  1 + the number of agents with a strictly higher pass@1, and agents with equal pass@1 share a
  rank.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from math import comb
from typing import Any

from osmosis_ai.eval._impl.report.stats import wilson_interval

__all__ = ["AgentScore", "TaskOutcome", "build_leaderboard", "pass_at_k"]

TIE_RULE = (
    "agents whose 95 % pass@1 interval overlaps the best agent's share rank 1; others are ranked "
    "1 + the number of agents with a higher pass@1"
)
CI_METHOD = "wilson"


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of one task: ``n`` attempts, ``c`` passed (requires ``k <= n``)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    """One agent's graded attempts of one task."""

    task: str
    attempts: int
    passed: int
    errors: int = 0


@dataclass(slots=True)
class AgentScore:
    agent: str
    tasks: list[TaskOutcome]
    pass_at_1: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    attempts: int = 0
    passed: int = 0
    pass_at_k: list[dict[str, float | int]] = field(default_factory=list)
    rank: int | None = None
    tied: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "tied": self.tied,
            "agent": self.agent,
            "pass_at_1": {
                "value": self.pass_at_1,
                "ci_low": self.ci_low,
                "ci_high": self.ci_high,
                "n": self.attempts,
            },
            "pass_at_k": self.pass_at_k,
            "attempts": self.attempts,
            "passed": self.passed,
            "tasks": [
                {"task": t.task, "attempts": t.attempts, "passed": t.passed, "errors": t.errors}
                for t in self.tasks
            ],
            **self.extra,
        }


def _score(agent: str, tasks: Sequence[TaskOutcome], extra: Mapping[str, Any]) -> AgentScore:
    graded = [t for t in tasks if t.attempts > 0]
    score = AgentScore(agent, list(tasks), extra=dict(extra))
    if not graded:
        return score
    score.attempts = sum(t.attempts for t in graded)
    score.passed = sum(t.passed for t in graded)
    score.pass_at_1 = sum(t.passed / t.attempts for t in graded) / len(graded)
    interval = wilson_interval(score.passed, score.attempts)
    if interval is not None:
        score.ci_low, score.ci_high = interval.low, interval.high
    for k in range(1, max(t.attempts for t in graded) + 1):
        eligible = [t for t in graded if t.attempts >= k]
        value = sum(pass_at_k(t.attempts, t.passed, k) for t in eligible) / len(eligible)
        score.pass_at_k.append({"k": k, "value": value, "tasks": len(eligible)})
    return score


def build_leaderboard(
    outcomes: Mapping[str, Sequence[TaskOutcome]],
    extra: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[AgentScore]:
    """Score and rank every agent (``outcomes``: agent label -> its tasks); best first.

    Agents without a graded attempt come last, unranked (``rank`` ``None``).
    """
    scores = [_score(a, t, (extra or {}).get(a, {})) for a, t in outcomes.items()]
    ranked = [s for s in scores if s.pass_at_1 is not None]
    unranked = [s for s in scores if s.pass_at_1 is None]

    def deepest(score: AgentScore) -> float:
        return float(score.pass_at_k[-1]["value"]) if score.pass_at_k else 0.0

    ranked.sort(key=lambda s: (-(s.pass_at_1 or 0.0), -deepest(s), s.agent))
    if ranked:
        best = ranked[0]
        low = best.ci_low if best.ci_low is not None else best.pass_at_1 or 0.0
        for score in ranked:
            higher = sum(1 for o in ranked if (o.pass_at_1 or 0.0) > (score.pass_at_1 or 0.0))
            overlaps = score is best or (score.ci_high is not None and score.ci_high >= low)
            score.rank = 1 if overlaps else 1 + higher
        tied_with_best = [s for s in ranked if s.rank == 1]
        for score in tied_with_best:
            score.tied = len(tied_with_best) > 1
    return ranked + unranked
