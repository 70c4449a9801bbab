"""``osmosis_ai.eval.judge``: the async LLM judge behind ``evaluate_rubric`` and judge graders.

Use :class:`Judge` in a grader (one per grader instance or module, ``await judge.score(...)``),
or 0.3's :func:`osmosis_ai.eval.rubric.evaluate_rubric`. Needs ``pip install 'osmosis-ai[rubric]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai._lazy import lazy_exports

_P = __name__
_EXPORTS = {
    "Judge": f"{_P}.judge",
    "JudgeCache": f"{_P}.cache",
    "JudgeCall": "osmosis_ai.judge_usage",
    "JudgeUsage": "osmosis_ai.judge_usage",
    "collect_judge_usage": "osmosis_ai.judge_usage",
    "RubricResult": f"{_P}.result",
    "MissingAPIKeyError": f"{_P}.errors",
    "ModelNotFoundError": f"{_P}.errors",
    "ProviderRequestError": f"{_P}.errors",
    "PROVIDERS": f"{_P}.providers",
    "resolve_target": f"{_P}.providers",
    "aclose_clients": f"{_P}.transport",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "PROVIDERS",
    "Judge",
    "JudgeCache",
    "JudgeCall",
    "JudgeUsage",
    "MissingAPIKeyError",
    "ModelNotFoundError",
    "ProviderRequestError",
    "RubricResult",
    "aclose_clients",
    "collect_judge_usage",
    "resolve_target",
]

if TYPE_CHECKING:
    from osmosis_ai.eval.judge.cache import JudgeCache
    from osmosis_ai.eval.judge.errors import (
        MissingAPIKeyError,
        ModelNotFoundError,
        ProviderRequestError,
    )
    from osmosis_ai.eval.judge.judge import Judge
    from osmosis_ai.eval.judge.providers import PROVIDERS, resolve_target
    from osmosis_ai.eval.judge.result import RubricResult
    from osmosis_ai.eval.judge.transport import aclose_clients
    from osmosis_ai.judge_usage import JudgeCall, JudgeUsage, collect_judge_usage
