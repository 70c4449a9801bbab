"""What the policy proxy records and how it retries: :class:`CallRecord`, :class:`RetryPolicy`.

A :class:`CallRecord` is one model call as the proxy saw it on the wire (latency, time to first
byte, status, attempts, usage, token ids and logprobs when the upstream returns them, the
request's messages and the response message, finish reason, ``system_fingerprint``); the
scheduler writes them to ``llm_calls.jsonl`` and :mod:`osmosis_ai.eval._impl.run_dir.trajectories` adds them to trajectories.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from osmosis_ai._util.backoff import Backoff, parse_retry_after
from osmosis_ai.errors import EvalError

if TYPE_CHECKING:
    from osmosis_ai.eval._impl.proxy.upstream import Upstream


@dataclass(slots=True)
class RetryPolicy:
    """Upstream retry schedule (:class:`~osmosis_ai._util.backoff.Backoff`):
    ``base * 2**(attempt-1)`` capped at ``max_delay`` with equal jitter; ``Retry-After`` wins."""

    max_attempts: int = 6
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, retry_after: str | None) -> float:
        asked = parse_retry_after(retry_after)
        if asked is not None:
            return min(asked, self.max_retry_after)
        return Backoff(self.base_delay, self.max_delay).delay(attempt)


@dataclass(slots=True)
class CallRecord:
    """One model call made by a rollout, as the proxy saw it."""

    started_at: float
    stream: bool
    status_code: int = 0
    attempts: int = 0
    latency_ms: float = 0.0
    first_byte_ms: float | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: Any = None
    error: str | None = None
    #: What the policy saw and said: the request's messages and tools, the response message
    #: (assembled from the deltas when streamed), finish reason and ``system_fingerprint``.
    messages: list[Any] | None = None
    tools: Any = None
    response: dict[str, Any] | None = None
    finish_reason: str | None = None
    system_fingerprint: str | None = None
    #: The request's sampling fields (:data:`osmosis_ai.eval._impl.results.reproducibility.SAMPLING_KEYS`).
    sampling: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data = {
            "started_at": self.started_at,
            "stream": self.stream,
            "status_code": self.status_code,
            "attempts": self.attempts,
            "latency_ms": round(self.latency_ms, 3),
            "first_byte_ms": None if self.first_byte_ms is None else round(self.first_byte_ms, 3),
            "model": self.model,
            "usage": self.usage,
            "prompt_token_ids": self.prompt_token_ids,
            "completion_token_ids": self.completion_token_ids,
            "logprobs": self.logprobs,
            "error": self.error,
            "messages": self.messages,
            "tools": self.tools,
            "response": self.response,
            "finish_reason": self.finish_reason,
            "system_fingerprint": self.system_fingerprint,
            "sampling": self.sampling,
        }
        return {k: v for k, v in data.items() if v is not None}

    @property
    def total_tokens(self) -> int:
        usage = self.usage or {}
        total = usage.get("total_tokens")
        if isinstance(total, int):
            return total
        parts = [usage.get("prompt_tokens"), usage.get("completion_tokens")]
        return sum(p for p in parts if isinstance(p, int))

    def absorb_response(self, data: Any) -> None:
        """Pick usage, model, token ids and logprobs out of a (final or chunk) response."""
        if not isinstance(data, dict):
            return
        if isinstance(data.get("model"), str):
            self.model = data["model"]
        if isinstance(data.get("usage"), dict):
            self.usage = data["usage"]
        if isinstance(data.get("prompt_token_ids"), list):
            self.prompt_token_ids = data["prompt_token_ids"]
        if isinstance(data.get("system_fingerprint"), str):
            self.system_fingerprint = data["system_fingerprint"]
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return
        choice = choices[0]
        if isinstance(choice.get("finish_reason"), str):
            self.finish_reason = choice["finish_reason"]
        if isinstance(choice.get("message"), dict):
            self.response = choice["message"]
        elif isinstance(choice.get("delta"), dict):
            self.response = _merge_delta(self.response, choice["delta"])
        if isinstance(choice.get("prompt_token_ids"), list):
            self.prompt_token_ids = choice["prompt_token_ids"]
        ids = choice.get("token_ids")
        if isinstance(ids, list):
            self.completion_token_ids = (self.completion_token_ids or []) + ids
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict) and isinstance(logprobs.get("content"), list):
            if isinstance(self.logprobs, dict) and isinstance(self.logprobs.get("content"), list):
                self.logprobs["content"].extend(logprobs["content"])
            else:
                self.logprobs = {"content": list(logprobs["content"])}
        elif logprobs is not None and self.logprobs is None:
            self.logprobs = logprobs


def _merge_delta(message: dict[str, Any] | None, delta: dict[str, Any]) -> dict[str, Any]:
    """Fold one streamed ``delta`` into the assistant message being assembled."""
    message = message if message is not None else {"role": "assistant", "content": None}
    for key in ("content", "reasoning_content", "reasoning"):
        piece = delta.get(key)
        if isinstance(piece, str):
            message[key] = (message.get(key) or "") + piece
    for call in delta.get("tool_calls") or ():
        if not isinstance(call, dict):
            continue
        calls: list[dict[str, Any]] = message.setdefault("tool_calls", [])
        index = call.get("index", len(calls))
        while len(calls) <= index:
            calls.append(
                {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
            )
        target = calls[index]
        if call.get("id"):
            target["id"] = call["id"]
        function = call.get("function") or {}
        if isinstance(function.get("name"), str):
            target["function"]["name"] += function["name"]
        if isinstance(function.get("arguments"), str):
            target["function"]["arguments"] += function["arguments"]
    return message


class ProxyGone(EvalError):
    """The policy proxy's process exited: the calls of rows still running are unknown."""


class PolicyRoutes(Protocol):
    """What the scheduler asks of a policy proxy, in this process
    (:class:`~osmosis_ai.eval._impl.proxy.policy_proxy.PolicyProxy`) or its own
    (:class:`~osmosis_ai.eval._impl.proxy.process.ProxyProcess`)."""

    @property
    def upstream(self) -> Upstream: ...

    def register(self, rollout_id: str) -> tuple[str, str]:
        """Open (or re-open, for a new attempt) a rollout's route: ``(url, token)``."""
        ...

    def discard(self, rollout_id: str) -> None:
        """Close the route of a rollout without a result; its calls are dropped."""
        ...

    async def finish(self, rollout_id: str) -> CallSummary:
        """Close the route of a rollout with a result; its calls are saved and summarised.
        Raises :class:`ProxyGone` when the proxy's process has exited."""
        ...

    def public_text(self, text: str, rollout_id: str) -> str:
        """``text`` with the rollout's proxy route replaced by the model endpoint."""
        ...


#: Statuses that mean the model endpoint failed a call (after retries): a broken run.
_INFRA_STATUSES = frozenset({401, 403, 408, 409, 429, 500, 502, 503, 504})


@dataclass(slots=True)
class CallSummary:
    """What a row's record needs of its policy calls (the calls themselves go to
    ``llm_calls.jsonl``): computed where the calls were recorded, so a proxy in its own process
    sends the controller this and not the calls."""

    count: int = 0
    tokens: int = 0
    #: The append-only verdict's JSON form (``None`` without calls).
    training_safety: dict[str, Any] | None = None
    #: Each call's ``usage`` (pricing input), in order.
    usages: list[dict[str, Any] | None] = field(default_factory=list)
    #: The error of the last call the model endpoint failed (unreachable, 401/403/408/429/5xx).
    endpoint_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _SUMMARY_FIELDS}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CallSummary:
        return cls(**{name: data[name] for name in _SUMMARY_FIELDS})


_SUMMARY_FIELDS = ("count", "tokens", "training_safety", "usages", "endpoint_error")


def summarize_calls(calls: list[CallRecord]) -> CallSummary:
    """A row's :class:`CallSummary` of ``calls`` (in the order they were made)."""
    if not calls:
        return CallSummary()
    from osmosis_ai.eval._impl.results.training_safety import check_append_only

    failed = [
        call.error
        for call in calls
        if call.error is not None and (call.status_code == 0 or call.status_code in _INFRA_STATUSES)
    ]
    return CallSummary(
        count=len(calls),
        tokens=sum(call.total_tokens for call in calls),
        training_safety=check_append_only(calls).to_json(),
        usages=[call.usage for call in calls],
        endpoint_error=failed[-1] if failed else None,
    )


def save_calls(file: TextIO | None, rollout_id: str, calls: list[CallRecord]) -> None:
    """Append a rollout's calls to ``llm_calls.jsonl`` (one open file: a file per rollout costs
    an open/close per row). Not fsync'd: call records enrich trajectories, they are not
    results."""
    if file is None or not calls:
        return
    from osmosis_ai._util.redaction import file_redactor, process_redactor

    redactor = file_redactor(str(getattr(file, "name", ""))) or process_redactor()
    with contextlib.suppress(OSError, TypeError, ValueError):
        file.write(
            redactor(
                "".join(
                    json.dumps({"rollout_id": rollout_id, **call}) + "\n"
                    for call in compact_calls(calls)
                )
            )
        )


def compact_calls(calls: list[CallRecord]) -> list[dict[str, Any]]:
    """The calls' JSON forms with each call's messages stored as a reference plus a suffix.

    A call whose messages start with the previous call's messages + response (the usual case)
    stores ``messages_from: {"call": k, "count": m}`` and only ``messages_suffix``; :func:`expand_calls`
    restores ``messages``. Keeps ``llm_calls.jsonl`` and trajectories linear in the conversation.
    Tools the same as the previous call's are stored once: ``tools_as_previous: true``.
    """
    out: list[dict[str, Any]] = []
    previous: list[Any] | None = None
    for index, call in enumerate(calls):
        data = call.to_json()
        if index and call.tools is not None and call.tools == calls[index - 1].tools:
            del data["tools"]
            data["tools_as_previous"] = True
        messages = call.messages
        if previous is not None and messages is not None:
            count = _common_prefix(previous, messages)
            if count:
                del data["messages"]
                data["messages_from"] = {"call": index - 1, "count": count}
                data["messages_suffix"] = messages[count:]
        if messages is not None:
            previous = messages + ([call.response] if call.response is not None else [])
        out.append(data)
    return out


def _common_prefix(a: list[Any], b: list[Any]) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def expand_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Undo :func:`compact_calls`: every call gets its full ``messages`` back (copies)."""
    out: list[dict[str, Any]] = []
    for call in calls:
        data = dict(call)
        if data.pop("tools_as_previous", False) and out:
            data["tools"] = out[-1].get("tools")
        ref = data.pop("messages_from", None)
        suffix = data.pop("messages_suffix", None)
        if isinstance(ref, dict) and isinstance(suffix, list):
            base = out[int(ref["call"])]
            history = list(base.get("messages") or [])
            if base.get("response") is not None:
                history.append(base["response"])
            data["messages"] = history[: int(ref["count"])] + suffix
        out.append(data)
    return out


class SSEWatcher:
    """Reads SSE ``data:`` payloads out of passed-through bytes to fill a :class:`CallRecord`."""

    def __init__(self, record: CallRecord) -> None:
        self._record = record
        self._buffer = b""
        #: The stream's ``data: [DONE]`` was seen.
        self.done = False

    @property
    def finished(self) -> bool:
        """The stream said it was complete: ``[DONE]``, or a choice's ``finish_reason``."""
        return self.done or self._record.finish_reason is not None

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            payload = line[5:].strip()
            if payload == b"[DONE]":
                self.done = True
                continue
            if not payload:
                continue
            try:
                self._record.absorb_response(json.loads(payload))
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
