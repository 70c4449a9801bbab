"""Is a rollout safe for token-in/token-out training? The append-only check.

Multi-turn RL trains on one token sequence per conversation: call k+1's prompt must be call k's
prompt followed by call k's completion. An agent framework that re-renders earlier turns
(re-serialised tool-call JSON, dropped reasoning, edited or truncated history, a changed system
prompt) breaks that silently: the trainer then learns from text the model never produced.

:func:`check_append_only` takes a rollout's policy calls, in order, each a mapping (or an object
with the same attributes) with

* ``messages``: the request's chat messages;
* ``response``: the assistant message the model returned;
* optionally ``prompt_token_ids``, ``completion_token_ids`` (vLLM ``return_token_ids``) and
  ``finish_reason``.

Calls are grouped into **threads**: a call continues the thread whose latest response appears
in its messages (the model's own words fed back); otherwise it starts a thread (a sub-agent, a
judge call, a fresh conversation). A call that changes both the system prompt and the tool set
starts a thread too: that is another agent (a handoff). Within a thread, call k+1's messages
must start with call k's messages plus call k's response, field by field: role, content,
tool-call ids, names and argument strings byte for byte, reasoning. Content given as a list of
one text part equals the same text as a string (chat templates render them alike).

The first divergence of the rollout is reported with a cause label:
``system_changed``, ``reasoning_dropped``, ``tool_args_reformatted`` (same JSON value, other
bytes), ``history_truncated`` (messages removed) or ``history_edited`` (anything else).
When token ids are present the same property is checked on ids.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Cause = Literal[
    "system_changed",
    "reasoning_dropped",
    "tool_args_reformatted",
    "history_truncated",
    "history_edited",
]
CAUSES: tuple[Cause, ...] = (
    "tool_args_reformatted",
    "reasoning_dropped",
    "history_edited",
    "history_truncated",
    "system_changed",
)
_EXCERPT = 80
_REASONING_KEYS = ("reasoning_content", "reasoning")


@dataclass(frozen=True, slots=True)
class Divergence:
    """Where a call stops extending its thread: call index, message index, field, cause."""

    call: int
    message: int
    field: str
    expected: str
    actual: str
    cause: Cause

    def to_json(self) -> dict[str, Any]:
        return {
            "call": self.call,
            "message": self.message,
            "field": self.field,
            "expected": self.expected,
            "actual": self.actual,
            "cause": self.cause,
        }


@dataclass(frozen=True, slots=True)
class TokenMismatch:
    """Call ``call``'s prompt ids differ from its predecessor's prompt + completion at ``position``."""

    call: int
    position: int
    expected: int | None
    actual: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "call": self.call,
            "position": self.position,
            "expected": self.expected,
            "actual": self.actual,
        }


@dataclass(frozen=True, slots=True)
class AppendOnlyVerdict:
    """The training-safety verdict of one rollout."""

    calls: int
    threads: int
    divergence: Divergence | None = None
    #: ``all`` calls carried prompt and completion token ids, ``some``, or ``none``.
    token_ids: Literal["all", "some", "none"] = "none"
    token_mismatch: TokenMismatch | None = None
    #: Indices of calls that stopped at the length limit (``finish_reason == "length"``).
    truncated_calls: list[int] = field(default_factory=list)

    @property
    def append_only(self) -> bool:
        """True when every thread only ever appended (messages, and token ids when present)."""
        return self.divergence is None and self.token_mismatch is None

    @property
    def cause(self) -> str | None:
        if self.divergence is not None:
            return self.divergence.cause
        return "token_mismatch" if self.token_mismatch is not None else None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "append_only": self.append_only,
            "calls": self.calls,
            "threads": self.threads,
            "token_ids": self.token_ids,
        }
        if self.divergence is not None:
            data["divergence"] = self.divergence.to_json()
        if self.token_mismatch is not None:
            data["token_mismatch"] = self.token_mismatch.to_json()
        if self.truncated_calls:
            data["truncated_calls"] = list(self.truncated_calls)
        return data


# ---- reading calls ---------------------------------------------------------------------------


def _get(call: Any, key: str) -> Any:
    if isinstance(call, Mapping):
        return call.get(key)
    return getattr(call, key, None)


def _messages(call: Any) -> list[Any]:
    messages = _get(call, "messages")
    return list(messages) if isinstance(messages, Sequence) else []


def _excerpt(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…"


def _content(message: Mapping[str, Any]) -> Any:
    content = message.get("content")
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], Mapping):
        part = content[0]
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            return part["text"]
    return content or None


def _reasoning(message: Mapping[str, Any]) -> Any:
    for key in _REASONING_KEYS:
        if message.get(key):
            return message[key]
    return None


def _tool_calls(message: Mapping[str, Any]) -> list[Any]:
    calls = message.get("tool_calls")
    return list(calls) if isinstance(calls, list) else []


def _same_turn(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Loose identity of an assistant turn (survives re-rendering): tool-call ids, else text."""
    if a.get("role") != b.get("role"):
        return False
    ids_a = [c.get("id") for c in _tool_calls(a) if isinstance(c, Mapping)]
    if ids_a:
        return ids_a == [c.get("id") for c in _tool_calls(b) if isinstance(c, Mapping)]
    text = _content(a)
    return text is not None and text == _content(b)


# ---- comparing two messages -------------------------------------------------------------------


def _compare(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> tuple[str, Any, Any] | None:
    """The first differing field as ``(field, expected, actual)``, or ``None``."""
    if expected == actual:
        return None
    for key in ("role", "name", "tool_call_id"):
        if expected.get(key) != actual.get(key):
            return key, expected.get(key), actual.get(key)
    if _content(expected) != _content(actual):
        return "content", _content(expected), _content(actual)
    want, got = _tool_calls(expected), _tool_calls(actual)
    for j in range(max(len(want), len(got))):
        if j >= len(want) or j >= len(got):
            return (
                f"tool_calls[{j}]",
                want[j] if j < len(want) else None,
                got[j] if j < len(got) else None,
            )
        diff = _compare_tool_call(want[j], got[j])
        if diff is not None:
            return f"tool_calls[{j}].{diff[0]}", diff[1], diff[2]
    if _reasoning(expected) != _reasoning(actual):
        return "reasoning_content", _reasoning(expected), _reasoning(actual)
    return None


def _compare_tool_call(want: Any, got: Any) -> tuple[str, Any, Any] | None:
    if not isinstance(want, Mapping) or not isinstance(got, Mapping):
        return None if want == got else ("", want, got)
    if want.get("id") != got.get("id"):
        return "id", want.get("id"), got.get("id")
    fw, fg = want.get("function") or {}, got.get("function") or {}
    if fw.get("name") != fg.get("name"):
        return "function.name", fw.get("name"), fg.get("name")
    if fw.get("arguments") != fg.get("arguments"):
        return "function.arguments", fw.get("arguments"), fg.get("arguments")
    return None


def _same_json(a: Any, b: Any) -> bool:
    try:
        return isinstance(a, str) and isinstance(b, str) and json.loads(a) == json.loads(b)
    except (json.JSONDecodeError, TypeError):
        return False


def _cause(index: int, name: str, want: Any, got: Any, expected: Mapping[str, Any]) -> Cause:
    if index == 0 and expected.get("role") == "system":
        return "system_changed"
    if name == "reasoning_content" and not got:
        return "reasoning_dropped"
    if name.endswith("function.arguments") and _same_json(want, got):
        return "tool_args_reformatted"
    return "history_edited"


def _first_divergence(call: int, expected: list[Any], actual: list[Any]) -> Divergence | None:
    for i, want in enumerate(expected):
        if i >= len(actual):
            return Divergence(call, i, "messages", _excerpt(want), "(missing)", "history_truncated")
        got = actual[i]
        if not isinstance(want, Mapping) or not isinstance(got, Mapping):
            if want != got:
                return Divergence(
                    call, i, "message", _excerpt(want), _excerpt(got), "history_edited"
                )
            continue
        diff = _compare(want, got)
        if diff is None:
            continue
        name, w, g = diff
        if any(isinstance(m, Mapping) and _compare(m, got) is None for m in expected[i + 1 :]):
            return Divergence(
                call, i, "messages", _excerpt(want), _excerpt(got), "history_truncated"
            )
        return Divergence(call, i, name, _excerpt(w), _excerpt(g), _cause(i, name, w, g, want))
    return None


# ---- threads ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Thread:
    last: int
    history: list[Any]  # last call's messages + its response
    response: Mapping[str, Any] | None
    system: Any
    tools: Any


def _system(messages: list[Any]) -> Any:
    first = messages[0] if messages else None
    if isinstance(first, Mapping) and first.get("role") == "system":
        return _content(first)
    return None


def _find_thread(threads: list[_Thread], messages: list[Any], tools: Any) -> _Thread | None:
    for thread in reversed(threads):
        response = thread.response
        if response is None or not any(
            isinstance(m, Mapping) and _same_turn(response, m) for m in messages
        ):
            continue
        if _system(messages) != thread.system and tools != thread.tools:
            return None  # another agent took over with the history: a handoff
        return thread
    return None


def check_append_only(calls: Iterable[Any]) -> AppendOnlyVerdict:
    """Check a rollout's policy calls (in call order) for the append-only property."""
    items = list(calls)
    threads: list[_Thread] = []
    divergence: Divergence | None = None
    token_mismatch: TokenMismatch | None = None
    with_ids = 0
    truncated: list[int] = []
    for index, call in enumerate(items):
        messages = _messages(call)
        tools = _get(call, "tools")
        response = _get(call, "response")
        prompt_ids, completion_ids = (
            _get(call, "prompt_token_ids"),
            _get(call, "completion_token_ids"),
        )
        if isinstance(prompt_ids, list) and isinstance(completion_ids, list):
            with_ids += 1
        if _get(call, "finish_reason") == "length":
            truncated.append(index)
        thread = _find_thread(threads, messages, tools)
        if thread is not None:
            if divergence is None:
                divergence = _first_divergence(index, thread.history, messages)
            if token_mismatch is None:
                token_mismatch = _token_check(index, items[thread.last], prompt_ids)
        else:
            thread = _Thread(index, [], None, _system(messages), tools)
            threads.append(thread)
        thread.last = index
        thread.response = response if isinstance(response, Mapping) else None
        thread.history = messages + ([response] if isinstance(response, Mapping) else [])
    token_state: Literal["all", "some", "none"] = (
        "none" if with_ids == 0 else "all" if with_ids == len(items) else "some"
    )
    return AppendOnlyVerdict(
        calls=len(items),
        threads=len(threads),
        divergence=divergence,
        token_ids=token_state,
        token_mismatch=token_mismatch,
        truncated_calls=truncated,
    )


def _token_check(index: int, previous: Any, prompt_ids: Any) -> TokenMismatch | None:
    prev_prompt = _get(previous, "prompt_token_ids")
    prev_completion = _get(previous, "completion_token_ids")
    if not (
        isinstance(prompt_ids, list)
        and isinstance(prev_prompt, list)
        and isinstance(prev_completion, list)
    ):
        return None
    expected = prev_prompt + prev_completion
    for position, want in enumerate(expected):
        if position >= len(prompt_ids):
            return TokenMismatch(index, position, want, None)
        if prompt_ids[position] != want:
            return TokenMismatch(index, position, want, prompt_ids[position])
    return None


__all__ = [
    "CAUSES",
    "AppendOnlyVerdict",
    "Cause",
    "Divergence",
    "TokenMismatch",
    "check_append_only",
]
