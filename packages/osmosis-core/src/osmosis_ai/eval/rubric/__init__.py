"""0.3's rubric API: ``from osmosis_ai.eval.rubric import evaluate_rubric, RubricResult``.

``evaluate_rubric`` is a coroutine function, as in 0.3 (``await`` it in a grader, or
``asyncio.run(evaluate_rubric(...))``); ``evaluate_rubric_sync`` is the blocking form. The
judge itself lives in :mod:`osmosis_ai.eval.judge`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai._lazy import exports_from, lazy_exports

_EXPORTS = exports_from(
    {
        "osmosis_ai.eval.judge.errors": (
            "MissingAPIKeyError ModelNotFoundError ProviderRequestError"
        ),
        "osmosis_ai.eval.judge.result": "RubricResult",
        "osmosis_ai.eval.rubric.engine": "evaluate_rubric evaluate_rubric_sync",
    }
)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from osmosis_ai.eval.judge.errors import (
        MissingAPIKeyError,
        ModelNotFoundError,
        ProviderRequestError,
    )
    from osmosis_ai.eval.judge.result import RubricResult
    from osmosis_ai.eval.rubric.engine import evaluate_rubric, evaluate_rubric_sync

__all__ = [
    "MissingAPIKeyError",
    "ModelNotFoundError",
    "ProviderRequestError",
    "RubricResult",
    "evaluate_rubric",
    "evaluate_rubric_sync",
]
