"""Chat messages and call records on the policy path: the request shape the policy accepts
(:func:`strict_chat_messages`), the policy's own tool-call argument strings sent back unchanged
(:func:`restore_tool_arguments`), the one usage normaliser (:func:`usage_dict`) and the per-call
record (:class:`PolicyCall`, filled by :class:`CallObserver`). Split from
:mod:`osmosis_ai.rollout.policy` (which re-exports every name) to keep each module to one concern.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

# -- request shape ---------------------------------------------------------------------------


def _text_parts(content: Any) -> list[str] | None:
    """The texts of ``content`` when it is a list of text parts only, else ``None``."""
    if not isinstance(content, list) or not content:
        return None
    texts: list[str] = []
    for part in cast("list[Any]", content):
        if not isinstance(part, Mapping):
            return None
        part = cast("Mapping[str, Any]", part)
        if part.get("type") != "text" or not isinstance(part.get("text"), str):
            return None
        texts.append(part["text"])
    return texts


def _same_value(raw: str, rendered: str) -> bool:
    """``raw`` parses to the value a framework rendered (an empty ``raw`` is ``{}``)."""
    try:
        value = json.loads(raw) if raw.strip() else {}
        return value == json.loads(rendered)
    except (json.JSONDecodeError, RecursionError):
        return False


def restore_tool_arguments(messages: Any, raw: Mapping[str, str]) -> Any:
    """``messages`` (chat-completions form) with each assistant tool call's ``arguments`` as the
    policy wrote them, by tool-call id, in place; returns ``messages``.

    Frameworks parse a tool call's arguments and render them again with ``json.dumps`` on the
    next request (``{"a":2}`` comes back as ``{"a": 2}``), so the policy would be asked to
    continue a conversation it did not produce. Only a string whose JSON value equals the
    rendered one is put back: a workflow that deliberately changed a call's input still sends
    its change. The call's ``function`` is replaced, not mutated (frameworks share it).
    """
    if not raw or not isinstance(messages, list):
        return messages
    for message in cast("list[Any]", messages):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for call in cast("dict[str, Any]", message).get("tool_calls") or ():
            if not isinstance(call, dict):
                continue
            original = raw.get(call.get("id") or "")
            function = call.get("function")
            if original is None or not isinstance(function, dict):
                continue
            rendered = function.get("arguments")
            if (
                isinstance(rendered, str)
                and rendered != original
                and _same_value(original, rendered)
            ):
                call["function"] = {**function, "arguments": original}
    return messages


def strict_chat_messages(messages: Any) -> Any:
    """``messages`` as strict OpenAI-compatible servers accept them; the same list otherwise.

    Frameworks send content as a list of parts even when it is only text, and ``null`` beside
    tool calls. The OpenAI API takes both, but strict servers do not: llama.cpp's server
    validates an assistant message's ``content`` as a string (HTTP 500 for a list or ``null``),
    and many chat templates concatenate ``content`` as a string. So an assistant message whose
    content is text parts gets their concatenation, one with tool calls and no content gets
    ``""``, and any other message with exactly one text part gets that text. The model sees the
    same tokens either way (the append-only check counts ``""`` and ``null`` as the same);
    images, audio and other parts are left as they are.
    """
    if not isinstance(messages, list):
        return messages
    out: list[Any] = []
    changed = False
    for message in cast("list[Any]", messages):
        if isinstance(message, Mapping):
            message = cast("Mapping[str, Any]", message)
            content = message.get("content")
            texts = _text_parts(content)
            if texts is not None and (message.get("role") == "assistant" or len(texts) == 1):
                message = {**message, "content": "".join(texts)}
                changed = True
            elif (
                content is None and message.get("role") == "assistant" and message.get("tool_calls")
            ):
                message = {**message, "content": ""}
                changed = True
        out.append(message)
    return out if changed else messages


# -- usage and per-call records ----------------------------------------------------------------

_USAGE_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "input_tokens",
    "output_tokens",
)


def usage_dict(usage: Any) -> dict[str, int] | None:
    """Chat-completions token counts from any ``usage`` the policy or a framework reports.

    Accepts a chat ``CompletionUsage``, a Responses/Agents ``Usage`` (``input_tokens`` /
    ``output_tokens``) or a mapping of either. Returns ``{"prompt_tokens", "completion_tokens",
    "total_tokens"}``, or ``None`` when nothing was reported (all missing or zero): a trajectory
    must not claim that a call consumed zero tokens.
    """
    if usage is None:
        return None
    if not isinstance(usage, Mapping):
        fields = ((name, getattr(usage, name, None)) for name in _USAGE_FIELDS)
        usage = {name: value for name, value in fields if value is not None}
    from osmosis_ai.rollout.trajectory.atif import usage_metrics

    metrics = usage_metrics(usage)
    prompt = int(metrics.get("prompt_tokens") or 0)
    completion = int(metrics.get("completion_tokens") or 0)
    total = usage.get("total_tokens")
    total = total if isinstance(total, int) and not isinstance(total, bool) and total > 0 else 0
    total = total or prompt + completion
    if not (prompt or completion or total):
        return None
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


@dataclass(frozen=True, slots=True)
class PolicyCall:
    """One completed policy call: what served it and what it cost.

    ``model`` is the model the server reported (else the one requested); ``usage`` comes from
    :func:`usage_dict`. The optional fields let an integration place the call's usage on the right
    assistant message later: ``position`` (history length when the call started),
    ``instructions`` (system prompt sent with it), ``call_ids`` (tool calls it produced) and
    ``text`` (assistant text it produced).
    """

    model: str
    usage: dict[str, int] | None = None
    position: int = 0
    instructions: str | None = None
    call_ids: tuple[str, ...] = ()
    text: str | None = None

    def annotate(self, message: dict[str, Any]) -> dict[str, Any]:
        """Put the call's ``model`` and ``usage`` on its assistant ``message`` (chat form), as
        the trajectory reads them; returns ``message``."""
        message["model"] = self.model
        if self.usage is not None:
            message["usage"] = dict(self.usage)
        return message


class CallObserver:
    """Collects the serving model and usage from one call's response or stream chunks."""

    __slots__ = ("model", "usage")

    def __init__(self) -> None:
        self.model: str | None = None
        self.usage: dict[str, int] | None = None

    def observe(self, response: Any) -> None:
        """Read ``model`` and ``usage`` from a ``ChatCompletion`` or a stream chunk."""
        model = getattr(response, "model", None)
        if isinstance(model, str) and model:
            self.model = model
        usage = usage_dict(getattr(response, "usage", None))
        if usage is not None:
            self.usage = usage

    def record(self, requested_model: str) -> PolicyCall:
        """The call's record; the requested model name when the server reported none."""
        return PolicyCall(model=self.model or requested_model, usage=self.usage)
