"""``Judge``: an async LLM judge for graders (``await judge.score(...)`` inside ``Grader.grade``).

What it does for every call:

* resolves ``provider/model`` to an OpenAI-compatible endpoint (:mod:`.providers`);
* waits for a slot of the per-endpoint, per-event-loop concurrency bound (:mod:`.transport`);
* asks for structured output (``output_mode``: ``"json_schema"`` by default, ``"tool"``,
  ``"json_object"`` or ``"text"``); an endpoint that refuses it (HTTP 400/422, or a 5xx naming
  ``response_format``, as llama.cpp's server answers) is asked again with less: ``json_schema``
  and ``tool`` fall back to ``json_object``, that to a prompt-only JSON answer. The mode that
  worked is remembered per endpoint and the fallback logged once; the reply is read by a
  tolerant parser (:mod:`.parse`);
* retries 408/409/429/5xx, timeouts, connection failures and unreadable replies up to
  ``max_retries`` times, waiting ``Retry-After`` when the provider sends it (:mod:`.retry`);
* clamps the score to ``[score_min, score_max]``;
* reads and writes the optional verdict cache (:mod:`.cache`);
* records tokens, latency, attempts and cost (:mod:`.usage`), apart from the policy's.

A call that still fails raises :class:`ProviderRequestError` (:class:`ModelNotFoundError` for a
404): a ``JudgeError``, which the rollout engine reports as ``judge_error``, never as reward 0.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any, Literal

from osmosis_ai.errors import ConfigurationError
from osmosis_ai.eval._impl.cost.pricing import ModelPrice, Pricer
from osmosis_ai.eval.judge import prompt as _prompt
from osmosis_ai.eval.judge.cache import JudgeCache, cache_key, resolve_cache
from osmosis_ai.eval.judge.errors import ProviderRequestError
from osmosis_ai.eval.judge.exchange import Exchange, run_exchange
from osmosis_ai.eval.judge.providers import JudgeTarget, pricing_provider, resolve_target
from osmosis_ai.eval.judge.result import RubricResult
from osmosis_ai.eval.judge.transport import (
    DEFAULT_MAX_CONCURRENCY,
    limit_for,
    require_openai,
)
from osmosis_ai.judge_usage import JudgeCall, JudgeUsage, record_call

type OutputMode = Literal["json_schema", "tool", "json_object", "text"]
OUTPUT_MODES: tuple[str, ...] = ("json_schema", "tool", "json_object", "text")
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_RETRIES = 4
CONCURRENCY_ENV = "OSMOSIS_JUDGE_MAX_CONCURRENCY"


def _default_concurrency() -> int:
    raw = os.environ.get(CONCURRENCY_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_CONCURRENCY
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigurationError(f"{CONCURRENCY_ENV}={raw!r} must be an integer >= 1")
    return value


def check_range(score_min: float, score_max: float) -> None:
    if not score_max > score_min:
        raise ConfigurationError(
            f"score_max ({score_max}) must be greater than score_min ({score_min})"
        )


#: Judge prices from the pricing library (its lookups cached for the process).
_PRICER = Pricer()


class Judge:
    """A reusable judge bound to one model; see the module docstring for the behaviour.

    ``prices`` is ``(input, output)`` in USD per million tokens, for ``cost_usd`` in the usage;
    without it the price comes from ``genai-prices`` (``cost_usd`` stays ``None``, counted in
    ``unpriced_calls``, when the model's price is unknown).
    ``cache`` is a :class:`JudgeCache`, a directory, ``True`` (``$OSMOSIS_JUDGE_CACHE`` or
    ``<osmosis home>/judge-cache``), ``False``, or ``None`` (``$OSMOSIS_JUDGE_CACHE`` if set).
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        score_min: float = 0.0,
        score_max: float = 1.0,
        system_prompt: str | None = None,
        timeout: float | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        retry_base_delay: float = 0.5,
        max_concurrency: int | None = None,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        output_mode: OutputMode = "json_schema",
        prices: tuple[float, float] | None = None,
        cache: JudgeCache | str | os.PathLike[str] | bool | None = None,
    ) -> None:
        check_range(score_min, score_max)
        if output_mode not in OUTPUT_MODES:
            raise ConfigurationError(
                f"output_mode {output_mode!r} is not one of {', '.join(OUTPUT_MODES)}"
            )
        if max_retries < 0:
            raise ConfigurationError("max_retries must be >= 0")
        if timeout is not None and not timeout > 0:
            raise ConfigurationError(f"timeout must be a positive number of seconds; got {timeout}")
        limit = max_concurrency if max_concurrency is not None else _default_concurrency()
        if limit < 1:
            raise ConfigurationError("max_concurrency must be >= 1")
        require_openai()  # fail here, with the install command, rather than on the first call
        self.target: JudgeTarget = resolve_target(model, api_key=api_key, base_url=base_url)
        self.model = model
        self.score_min = float(score_min)
        self.score_max = float(score_max)
        self.system_prompt = system_prompt
        self.timeout = float(timeout) if timeout is not None else DEFAULT_TIMEOUT_S
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        self.max_concurrency = limit
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.output_mode: OutputMode = output_mode
        self.prices = prices
        self.cache = resolve_cache(cache)
        self.usage = JudgeUsage()

    def __repr__(self) -> str:
        return f"Judge(model={self.model!r}, base_url={self.target.base_url!r})"

    async def score(
        self,
        *,
        solution_str: str,
        rubric: str,
        ground_truth: str | None = None,
        original_input: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        score_min: float | None = None,
        score_max: float | None = None,
    ) -> RubricResult:
        """Grade ``solution_str`` against ``rubric``; the score is clamped to the range."""
        low = self.score_min if score_min is None else float(score_min)
        high = self.score_max if score_max is None else float(score_max)
        check_range(low, high)
        if not isinstance(solution_str, str) or not solution_str.strip():
            raise TypeError("'solution_str' must be a non-empty string")
        if not isinstance(rubric, str) or not rubric.strip():
            raise TypeError("'rubric' must be a non-empty string")
        messages = [
            {
                "role": "system",
                "content": _prompt.build_system_prompt(low, high, self.system_prompt),
            },
            {
                "role": "user",
                "content": _prompt.build_user_prompt(
                    rubric=rubric,
                    solution_str=solution_str.strip(),
                    score_min=low,
                    score_max=high,
                    original_input=original_input,
                    ground_truth=ground_truth,
                    metadata=metadata,
                ),
            },
        ]
        key = cache_key(self._cache_identity(messages)) if self.cache is not None else None
        if key is not None and self.cache is not None:
            hit = await self.cache.get(key)
            if hit is not None and isinstance(hit.get("raw_score"), int | float):
                return self._result(
                    float(hit["raw_score"]),
                    str(hit.get("explanation", "")),
                    low,
                    high,
                    self._record(cached=True),
                )
        exchange = Exchange(target=self.target, messages=messages, output_mode=self.output_mode)
        started = time.perf_counter()
        try:
            outcome = await run_exchange(
                exchange,
                request_timeout=self.timeout,
                max_retries=self.max_retries,
                retry_base_delay=self.retry_base_delay,
                sampling=self._sampling(),
                limit=limit_for(self.target.base_url, self.max_concurrency),
            )
        except ProviderRequestError as exc:
            self._record(latency=time.perf_counter() - started, attempts=exc.attempts, failed=True)
            raise
        call = self._record(
            latency=time.perf_counter() - started,
            attempts=outcome.attempts,
            prompt_tokens=outcome.prompt_tokens,
            completion_tokens=outcome.completion_tokens,
        )
        if key is not None and self.cache is not None:
            await self.cache.put(
                key, {"raw_score": outcome.score, "explanation": outcome.explanation}
            )
        return self._result(outcome.score, outcome.explanation, low, high, call)

    def score_sync(self, **kwargs: Any) -> RubricResult:
        """:meth:`score` for synchronous code (not from inside a running event loop)."""
        from osmosis_ai.eval.judge.sync import run_sync

        return run_sync(self.score(**kwargs))

    # -- helpers ------------------------------------------------------------------------

    def _sampling(self) -> dict[str, Any]:
        sampling: dict[str, Any] = {}
        if self.temperature is not None:
            sampling["temperature"] = self.temperature
        if self.max_tokens is not None:
            sampling["max_tokens"] = self.max_tokens
        return sampling

    def _cache_identity(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        return {
            "model": self.target.model,
            "provider": self.target.provider,
            "base_url": self.target.base_url,
            "messages": messages,
            "sampling": self._sampling(),
            "output_mode": self.output_mode,
        }

    def _record(
        self,
        *,
        latency: float = 0.0,
        attempts: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cached: bool = False,
        failed: bool = False,
    ) -> JudgeCall:
        cost = None if cached else self._cost(prompt_tokens, completion_tokens)
        call = JudgeCall(
            model=self.model,
            provider=self.target.provider,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_s=latency,
            attempts=attempts,
            cached=cached,
            failed=failed,
            cost_usd=cost,
        )
        self.usage.add(call)
        record_call(call)
        return call

    def _cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """``prices=`` when given, else the pricing library's price (``None``: unknown)."""
        split = {"input": prompt_tokens, "output": completion_tokens}
        if self.prices is not None:
            return ModelPrice(input=self.prices[0], output=self.prices[1]).cost(split)
        return _PRICER.price(
            self.target.model,
            split,
            provider=pricing_provider(self.target),
            base_url=self.target.base_url,
        ).usd

    @staticmethod
    def _result(
        raw: float, explanation: str, low: float, high: float, call: JudgeCall
    ) -> RubricResult:
        return RubricResult(
            score=min(high, max(low, raw)), explanation=explanation, raw_score=raw, call=call
        )
