"""One logical judge call over HTTP: request, retries, structured output, parsing.

Kept apart from :class:`~osmosis_ai.eval.judge.judge.Judge` (which adds caching, clamping and
usage) so that the retry policy reads in one place.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from osmosis_ai.eval._adaptive import CONGESTION_STATUSES, AdaptiveLimit
from osmosis_ai.eval.judge import prompt as _prompt
from osmosis_ai.eval.judge.errors import ModelNotFoundError, ProviderRequestError
from osmosis_ai.eval.judge.parse import MalformedReplyError, parse_reply
from osmosis_ai.eval.judge.providers import JudgeTarget
from osmosis_ai.eval.judge.retry import backoff, is_retryable, retry_after
from osmosis_ai.eval.judge.transport import client_for

#: ``(base_url, model)`` pairs that rejected structured output with HTTP 400: asked in text.
_TEXT_ONLY: set[tuple[str, str]] = set()


@dataclass(slots=True)
class Exchange:
    target: JudgeTarget
    messages: list[dict[str, str]]
    output_mode: str


@dataclass(frozen=True, slots=True)
class Outcome:
    score: float
    explanation: str
    attempts: int
    prompt_tokens: int
    completion_tokens: int


def _structure(mode: str) -> dict[str, Any]:
    if mode == "json_schema":
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "judge_score",
                    "schema": _prompt.RESPONSE_SCHEMA,
                    "strict": True,
                },
            }
        }
    if mode == "tool":
        return {
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": _prompt.TOOL_NAME,
                        "description": "Submit the score and a short explanation.",
                        "parameters": _prompt.RESPONSE_SCHEMA,
                    },
                }
            ],
            "tool_choice": {"type": "function", "function": {"name": _prompt.TOOL_NAME}},
        }
    if mode == "json_object":
        return {"response_format": {"type": "json_object"}}
    return {}


def _reply_text(completion: Any) -> str | None:
    choices = getattr(completion, "choices", None) or []
    if not choices:
        return None
    message = choices[0].message
    for call in getattr(message, "tool_calls", None) or []:
        function = getattr(call, "function", None)
        if function is not None and function.arguments:
            return function.arguments
    return message.content


def _tokens(completion: Any) -> tuple[int, int]:
    usage = getattr(completion, "usage", None)
    if usage is None:
        return 0, 0
    return int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)


def _redact(text: str, secret: str) -> str:
    return text.replace(secret, "***") if len(secret) >= 8 else text


def _status_detail(exc: Any, target: JudgeTarget) -> str:
    message = getattr(exc, "message", None) or str(exc)
    return _redact(f"HTTP {exc.status_code}: {message}", target.api_key)[:500]


async def _create(client: Any, request: dict[str, Any], limit: AdaptiveLimit | None) -> Any:
    """One attempt, holding a slot of the endpoint's adaptive limit and telling it the outcome."""
    import openai

    if limit is None:
        return await client.chat.completions.create(**request)
    started = await limit.acquire()
    try:
        completion = await client.chat.completions.create(**request)
    except openai.APIStatusError as exc:
        if exc.status_code in CONGESTION_STATUSES:
            limit.congested(started, retry_after(exc.response.headers))
        raise
    except openai.APITimeoutError:
        limit.congested(started, None)
        raise
    finally:
        limit.release()
    limit.succeeded()
    return completion


async def run_exchange(
    exchange: Exchange,
    *,
    request_timeout: float,
    max_retries: int,
    retry_base_delay: float,
    sampling: dict[str, Any],
    limit: AdaptiveLimit | None = None,
) -> Outcome:
    """Call the judge until it answers with a score, or raise ``ProviderRequestError``."""
    import openai

    target = exchange.target
    client = client_for(target, request_timeout)
    mode = "text" if (target.base_url, target.model) in _TEXT_ONLY else exchange.output_mode
    attempt = 0
    failures = 0
    spent = [0, 0]  # prompt and completion tokens over every answered attempt
    while True:
        attempt += 1
        wait: float | None = None
        try:
            request: dict[str, Any] = {
                "model": target.model,
                "messages": exchange.messages,
                **sampling,
                **_structure(mode),
            }
            completion = await _create(client, request, limit)
        except openai.APIStatusError as exc:
            status = exc.status_code
            detail = _status_detail(exc, target)
            if status == 404:
                raise ModelNotFoundError(
                    target.provider,
                    target.model,
                    f"Model '{target.model}' was not found at {target.base_url} ({detail}). "
                    f"Check the model name and that your {target.provider} account can use it.",
                    status_code=404,
                    attempts=attempt,
                ) from exc
            if status == 400 and mode != "text":
                _TEXT_ONLY.add((target.base_url, target.model))
                mode = "text"
                continue  # asked again without structured output; not a failure
            if not is_retryable(status) or failures >= max_retries:
                raise ProviderRequestError(
                    target.provider, target.model, detail, status_code=status, attempts=attempt
                ) from exc
            wait = retry_after(exc.response.headers)
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            if failures >= max_retries:
                what = "timed out" if isinstance(exc, openai.APITimeoutError) else "was unreachable"
                raise ProviderRequestError(
                    target.provider,
                    target.model,
                    f"the judge endpoint {what} ({target.base_url}, timeout {request_timeout:g}s) "
                    f"after {attempt} attempt(s)",
                    attempts=attempt,
                ) from exc
        else:
            prompt_tokens, completion_tokens = _tokens(completion)
            spent[0] += prompt_tokens
            spent[1] += completion_tokens
            try:
                score, explanation = parse_reply(_reply_text(completion))
            except MalformedReplyError as exc:
                if failures >= max_retries:
                    raise ProviderRequestError(
                        target.provider, target.model, str(exc), attempts=attempt
                    ) from exc
                wait = 0.0
            else:
                return Outcome(score, explanation, attempt, spent[0], spent[1])
        failures += 1
        await asyncio.sleep(wait if wait is not None else backoff(failures, retry_base_delay))
