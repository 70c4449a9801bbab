"""What a scripted policy answers: text, tool calls, HTTP errors, optionally after a delay.

A script is either a list of turns or a callable that decides the reply from the request body.
Each element (or each value the callable returns) may be:

* a ``str`` — an assistant message with that text;
* a :class:`Reply` — text and/or :class:`ToolCall` s, with optional ``delay`` and ``usage``;
* an :class:`ErrorReply` — an HTTP error with a status and a JSON (or text) body.

Helpers build the common shapes::

    text_reply("hello")
    tool_call_reply("multiply", {"a": 6, "b": 7})
    error_reply(503, "upstream overloaded")
    error_reply(429, headers={"Retry-After": "1"})
    delayed(0.5, text_reply("slow"))
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call the assistant makes. ``arguments`` is a dict or a JSON string."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful assistant turn.

    ``finish_reason`` defaults to ``"tool_calls"`` when there are tool calls, else ``"stop"``.
    ``usage`` overrides the computed token counts; ``model`` overrides the server's model name;
    ``delay`` (seconds) is waited before the response starts. ``reasoning`` is returned as the
    message's ``reasoning_content`` (as vLLM and DeepSeek do), streamed before the content.
    """

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    delay: float = 0.0
    usage: dict[str, int] | None = None
    model: str | None = None
    reasoning: str | None = None

    @property
    def resolved_finish_reason(self) -> str:
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """An HTTP error answer; a ``str`` body is wrapped in the OpenAI error envelope.

    ``headers`` are sent with it, e.g. ``{"Retry-After": "2"}`` on a 429.
    """

    status: int
    body: Any = None
    delay: float = 0.0
    headers: dict[str, str] | None = None

    def json_body(self) -> Any:
        if self.body is None or isinstance(self.body, str):
            message = self.body or f"scripted policy error (HTTP {self.status})"
            return {"error": {"message": message, "type": "scripted_error", "code": self.status}}
        return self.body


type ScriptedTurn = Reply | ErrorReply | str


def text_reply(content: str, *, delay: float = 0.0) -> Reply:
    return Reply(content=content, delay=delay)


def tool_call_reply(
    name: str,
    arguments: dict[str, Any] | str | None = None,
    *,
    content: str | None = None,
    call_id: str | None = None,
    delay: float = 0.0,
) -> Reply:
    """An assistant turn calling one tool (add more with ``Reply(tool_calls=(...))``)."""
    call = ToolCall(name=name, arguments=arguments if arguments is not None else {}, id=call_id)
    return Reply(content=content, tool_calls=(call,), delay=delay)


def error_reply(
    status: int, body: Any = None, *, delay: float = 0.0, headers: dict[str, str] | None = None
) -> ErrorReply:
    return ErrorReply(status=status, body=body, delay=delay, headers=headers)


def delayed(seconds: float, turn: ScriptedTurn) -> Reply | ErrorReply:
    """``turn``, answered after ``seconds`` (use it to trigger client or rollout timeouts)."""
    return replace(as_reply(turn), delay=seconds)


def as_reply(turn: object) -> Reply | ErrorReply:
    """Normalize a scripted turn; anything else is a ``TypeError`` naming the allowed shapes."""
    if isinstance(turn, (Reply, ErrorReply)):
        return turn
    if isinstance(turn, str):
        return Reply(content=turn)
    raise TypeError(
        f"a scripted policy turn must be a str, Reply or ErrorReply; got {type(turn).__name__}"
    )


def reply_from_json(value: object) -> Reply | ErrorReply:
    """A scripted turn from its JSON form (a reply script's ``replies`` entries).

    * ``"text"`` — an assistant message;
    * ``{"content": ..., "tool_calls": [{"name": ..., "arguments": {...}, "id": ...}],
      "reasoning": ..., "finish_reason": ...}`` — a :class:`Reply` (every key optional);
    * ``{"error": 503, "body": ..., "headers": {...}}`` — an :class:`ErrorReply`.

    Anything else is a ``ValueError`` naming the accepted shapes.
    """
    if isinstance(value, str):
        return Reply(content=value)
    if not isinstance(value, dict):
        raise ValueError(f"a reply must be a string or an object, got {type(value).__name__}")
    if "error" in value:
        status = value["error"]
        if not isinstance(status, int) or not 400 <= status <= 599:
            raise ValueError(f'"error" must be an HTTP status from 400 to 599, got {status!r}')
        return ErrorReply(status=status, body=value.get("body"), headers=value.get("headers"))
    unknown = sorted(set(value) - {"content", "tool_calls", "reasoning", "finish_reason"})
    if unknown:
        raise ValueError(
            f"unknown reply key(s) {', '.join(unknown)}; a reply has content, tool_calls, "
            'reasoning, finish_reason (or "error" for an HTTP error)'
        )
    calls = []
    for call in value.get("tool_calls") or []:
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise ValueError(f'each tool call needs a "name" (and "arguments"), got {call!r}')
        arguments = call.get("arguments", {})
        if not isinstance(arguments, (dict, str)):
            raise ValueError(f'tool call "arguments" must be an object or a JSON string: {call!r}')
        calls.append(ToolCall(name=call["name"], arguments=arguments, id=call.get("id")))
    return Reply(
        content=value.get("content"),
        tool_calls=tuple(calls),
        reasoning=value.get("reasoning"),
        finish_reason=value.get("finish_reason"),
    )
