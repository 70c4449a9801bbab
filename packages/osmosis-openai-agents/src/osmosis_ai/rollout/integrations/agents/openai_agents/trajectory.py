"""Building a rollout's sample from session items and the recorded policy calls.

``sample.messages`` stays in the SDK's native Responses-API item shape, so graders written for
the public osmosis-ai SDK keep working; the only additions are the system instructions each
agent ran with (as ``{"role": "system"}`` items, which the Responses API accepts), placed where
the model saw them. ``trajectory_messages`` is the chat-completions form the trainer's
trajectory (ATIF) expects, with the usage and model of the call that produced each assistant
message inline.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from osmosis_ai.rollout.integrations.spi import PolicyCall

logger = logging.getLogger(__name__)


def with_instructions(
    items: Sequence[Mapping[str, Any]], calls: Sequence[PolicyCall]
) -> list[dict[str, Any]]:
    """Deep copies of ``items`` with a system item wherever the instructions changed.

    The first call's instructions go first (the SDK sends them before everything else); a
    later call with different instructions (a handoff to another agent) gets its system item
    at the position the model saw it.
    """
    inserts: list[tuple[int, str]] = []
    previous: str | None = None
    for index, call in enumerate(calls):
        if call.instructions and call.instructions != previous:
            position = 0 if index == 0 else min(max(call.position, 0), len(items))
            inserts.append((position, call.instructions))
        previous = call.instructions
    messages: list[dict[str, Any]] = []
    cursor = 0
    for position, instructions in sorted(inserts, key=lambda pair: pair[0]):
        messages.extend(copy.deepcopy(dict(item)) for item in items[cursor:position])
        cursor = max(cursor, position)
        messages.append({"role": "system", "content": instructions})
    messages.extend(copy.deepcopy(dict(item)) for item in items[cursor:])
    return messages


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [part.get("text") for part in content if isinstance(part, Mapping)]
        joined = "".join(t for t in texts if isinstance(t, str))
        return joined or None
    return None


def _match(message: Mapping[str, Any], calls: Sequence[PolicyCall], used: set[int]) -> int | None:
    tool_calls = message.get("tool_calls") or ()
    ids = {tc.get("id") for tc in tool_calls if isinstance(tc, Mapping)}
    if ids:
        for index, call in enumerate(calls):
            if index not in used and ids.intersection(call.call_ids):
                return index
        return None
    text = _content_text(message.get("content"))
    for index, call in enumerate(calls):
        if index not in used and not call.call_ids and call.text == text:
            return index
    return None


def chat_messages(
    messages: Sequence[Mapping[str, Any]], calls: Sequence[PolicyCall]
) -> list[dict[str, Any]] | None:
    """The chat-completions form of ``messages`` with per-call ``usage``/``model`` inline.

    ``None`` (no trajectory) when the SDK cannot convert an item, with a warning: a sample
    without a trajectory is better than a failed rollout.
    """
    from agents.models.chatcmpl_converter import Converter

    try:
        converted = Converter.items_to_messages(copy.deepcopy(list(messages)))  # type: ignore[arg-type]
    except Exception as exc:
        logger.warning("could not convert the session to chat-completions messages: %s", exc)
        return None
    out: list[dict[str, Any]] = [dict(message) for message in converted]
    used: set[int] = set()
    for message in out:
        if message.get("role") != "assistant":
            continue
        index = _match(message, calls, used)
        if index is None:
            continue
        used.add(index)
        calls[index].annotate(message)
    return out
