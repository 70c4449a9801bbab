"""``RubricResult``: what one judge call returns (0.3's dataclass, plus the call's usage)."""

from __future__ import annotations

from dataclasses import dataclass, field

from osmosis_ai.judge_usage import JudgeCall


@dataclass
class RubricResult:
    """The judge's score (clamped to ``[score_min, score_max]``) and its explanation.

    ``raw_score`` is the score before clamping; ``call`` records the tokens, latency, attempts
    and cost of the call that produced it (``cached=True`` when it came from the judge cache).
    Neither takes part in equality, so ``RubricResult(score=1.0, explanation="ok")`` compares
    as in 0.3.
    """

    score: float
    explanation: str
    raw_score: float | None = field(default=None, compare=False)
    call: JudgeCall | None = field(default=None, compare=False, repr=False)
