"""``evaluate_rubric``: 0.3's one-call LLM judge, on the async :class:`~osmosis_ai.eval.judge.Judge`.

Every 0.3 argument keeps its name, default and meaning. New keyword arguments (all optional):
``base_url`` (any OpenAI-compatible server), ``cache`` (see :class:`~osmosis_ai.eval.judge.Judge`)
and ``judge`` (reuse a configured :class:`~osmosis_ai.eval.judge.Judge`; the per-call arguments
then override its rubric inputs and score range only).
"""

from __future__ import annotations

import os
from typing import Any

from osmosis_ai.eval.judge.cache import JudgeCache
from osmosis_ai.eval.judge.judge import DEFAULT_TIMEOUT_S, Judge
from osmosis_ai.eval.judge.providers import PROVIDERS
from osmosis_ai.eval.judge.result import RubricResult

#: Provider -> the environment variable holding its API key (0.3 exported this name).
DEFAULT_API_KEY_ENV: dict[str, str] = {
    name: spec.key_env for name, spec in PROVIDERS.items() if spec.key_env and spec.key_required
}
DEFAULT_REQUEST_TIMEOUT_SECONDS = DEFAULT_TIMEOUT_S


async def evaluate_rubric(
    *,
    solution_str: str,
    rubric: str,
    model: str,
    ground_truth: str | None = None,
    original_input: str | None = None,
    metadata: dict[str, Any] | None = None,
    score_min: float = 0.0,
    score_max: float = 1.0,
    api_key: str | None = None,
    timeout: float | None = None,  # noqa: ASYNC109 - 0.3's signature
    system_prompt: str | None = None,
    base_url: str | None = None,
    cache: JudgeCache | str | os.PathLike[str] | bool | None = None,
    judge: Judge | None = None,
) -> RubricResult:
    """Score ``solution_str`` against ``rubric`` with the judge ``model`` (``provider/model``).

    Returns a :class:`RubricResult` whose ``score`` is clamped to ``[score_min, score_max]``.
    Raises :class:`MissingAPIKeyError` (no key passed or in the provider's variable),
    :class:`ModelNotFoundError` (HTTP 404) or :class:`ProviderRequestError` (the provider kept
    failing, or its reply held no score, after retries).
    """
    if judge is None:
        judge = Judge(
            model,
            api_key=api_key,
            base_url=base_url,
            score_min=score_min,
            score_max=score_max,
            system_prompt=system_prompt,
            timeout=timeout,
            cache=cache,
        )
    return await judge.score(
        solution_str=solution_str,
        rubric=rubric,
        ground_truth=ground_truth,
        original_input=original_input,
        metadata=metadata,
        score_min=score_min,
        score_max=score_max,
    )


def evaluate_rubric_sync(**kwargs: Any) -> RubricResult:
    """:func:`evaluate_rubric` for synchronous code (same keyword arguments)."""
    from osmosis_ai.eval.judge.sync import run_sync

    return run_sync(evaluate_rubric(**kwargs))
