"""One logical judge call over HTTP: request, retries, structured output, parsing.

Kept apart from :class:`~osmosis_ai.eval.judge.judge.Judge` (which adds caching, clamping and
usage) so that the retry policy reads in one place.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from osmosis_ai.eval._impl.adaptive import CONGESTION_STATUSES, AdaptiveLimit
from osmosis_ai.eval.judge import prompt as _prompt
from osmosis_ai.eval.judge.errors import ModelNotFoundError, ProviderRequestError
from osmosis_ai.eval.judge.parse import MalformedReplyError, parse_reply
from osmosis_ai.eval.judge.providers import JudgeTarget
from osmosis_ai.eval.judge.retry import backoff, is_retryable, retry_after
from osmosis_ai.eval.judge.transport import client_for

_log = logging.getLogger("osmosis_ai.eval.judge")

#: The next output mode to try when an endpoint rejects one: structured output degrades to JSON
#: mode, JSON mode to a prompt-only JSON answer (the parser reads JSON out of plain text).
_FALLBACK: dict[str, str] = {
    "json_schema": "json_object",
    "tool": "json_object",
    "json_object": "text",
}
#: ``(base_url, model)`` -> the output mode that endpoint accepts, once one was rejected. Every
#: later call (any Judge, this process) asks that way at once instead of failing first.
_ACCEPTED_MODE: dict[tuple[str, str], str] = {}
#: Words in an error body that say the structured-output request itself was refused (strict
#: servers answer 500 for a schema violation: llama.cpp's says "Input should be 'text' or
#: 'json_object'" about ``response_format``).
_STRUCTURE_WORDS = ("response_format", "json_schema", "json_object", "tool_choice", "tools")


def _rejects_structure(status: int, detail: str) -> bool:
    """Whether an error answer refuses the request's structured-output fields."""
    if status in (400, 415, 422):
        return True
    return status >= 500 and any(word in detail for word in _STRUCTURE_WORDS)


def _degrade(target: JudgeTarget, mode: str, detail: str) -> str:
    """The next mode after ``mode`` was refused; remembered for the endpoint, said once."""
    fallback = _FALLBACK[mode]
    key = (target.base_url, target.model)
    if _ACCEPTED_MODE.get(key) != fallback:
        _ACCEPTED_MODE[key] = fallback
        _log.warning(
            "judge %s at %s refused output_mode %r (%s); asking with %r from now on",
            target.model,
            target.base_url,
            mode,
            detail[:200],
            fallback,
        )
    return fallback


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
    from osmosis_ai._util.redaction import redact

    return redact(text, [secret])


def _status_detail(exc: Any, target: JudgeTarget) -> str:
    message = getattr(exc, "message", None) or str(exc)
    return _redact(f"HTTP {exc.status_code}: {message}", target.api_key)[:500]


async def _bounded(client: Any, request: dict[str, Any], deadline_sec: float) -> Any:
    """``chat.completions.create`` within ``deadline_sec`` in all: the client's own timeout
    bounds each read, so a judge that trickles its reply a byte at a time would never time
    out; past the deadline this raises ``openai.APITimeoutError`` like a read timeout does."""
    import httpx
    import openai

    try:
        async with asyncio.timeout(deadline_sec):
            return await client.chat.completions.create(**request)
    except TimeoutError:
        url = f"{str(client.base_url).rstrip('/')}/chat/completions"
        # The request is only carried along (openai 1-2 type it httpx's, openai 3 httpx2's).
        request_record: Any = httpx.Request("POST", url)
        raise openai.APITimeoutError(request=request_record) from None


async def _create(
    client: Any, request: dict[str, Any], limit: AdaptiveLimit | None, deadline_sec: float
) -> Any:
    """One attempt, holding a slot of the endpoint's adaptive limit and telling it the outcome."""
    import openai

    if limit is None:
        return await _bounded(client, request, deadline_sec)
    started = await limit.acquire()
    try:
        completion = await _bounded(client, request, deadline_sec)
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
    mode = _ACCEPTED_MODE.get((target.base_url, target.model), exchange.output_mode)
    if exchange.output_mode == "text":
        mode = "text"
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
            completion = await _create(client, request, limit, request_timeout)
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
            if mode != "text" and _rejects_structure(status, detail):
                mode = _degrade(target, mode, detail)
                continue  # asked again with less structure; not a failure
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
