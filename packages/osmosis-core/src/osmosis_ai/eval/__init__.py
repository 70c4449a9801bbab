"""``osmosis_ai.eval``: evaluating rollouts, including LLM-as-judge grading.

Names resolve on first use so that ``import osmosis_ai.eval`` stays cheap; the judge needs the
``openai`` client (``pip install 'osmosis-ai[rubric]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai._lazy import lazy_exports

_EXPORTS = {
    # LLM-as-judge (osmosis_ai.eval.judge; 0.3's API in osmosis_ai.eval.rubric)
    "Judge": "osmosis_ai.eval.judge.judge",
    "JudgeUsage": "osmosis_ai.judge_usage",
    "RubricResult": "osmosis_ai.eval.judge.result",
    "evaluate_rubric": "osmosis_ai.eval.rubric.engine",
    "evaluate_rubric_sync": "osmosis_ai.eval.rubric.engine",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from osmosis_ai.eval.judge.judge import Judge
    from osmosis_ai.eval.judge.result import RubricResult
    from osmosis_ai.eval.rubric.engine import evaluate_rubric, evaluate_rubric_sync
    from osmosis_ai.judge_usage import JudgeUsage

__all__ = ["Judge", "JudgeUsage", "RubricResult", "evaluate_rubric", "evaluate_rubric_sync"]
