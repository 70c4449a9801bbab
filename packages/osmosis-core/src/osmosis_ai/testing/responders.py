"""Built-in policies: callables deciding a reply from the chat-completions request body.

* :func:`multiply_solver` — a two-turn tool-using agent for "multiply" tasks. If the last message
  is a ``tool`` result it answers ``#### <product>``; otherwise it calls the tool ``multiply``
  with ``{"a": x, "b": y}``, the first two integers of the last user message.
* :func:`echo` — answers with the text of the last user message.
* :func:`instant` — answers ``"ok"`` immediately (benchmarks: the cheapest possible policy).
  :func:`instant_text` builds one with another fixed text.

Pass one to :class:`~osmosis_ai.testing.ScriptedPolicyServer`, or by name (``"multiply"``,
``"echo"``, ``"instant"``). Your own responder is any ``(body: dict) -> str | Reply |
ErrorReply`` function, sync or async.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from osmosis_ai.rollout.types.messages import content_text
from osmosis_ai.testing.replies import Reply, ToolCall

_INT = re.compile(r"-?\d+")


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a message whose ``content`` is a string or a list of content parts."""
    return content_text(message.get("content"))


def _messages(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return []
    return [m for m in messages if isinstance(m, Mapping)]


def last_user_text(body: Mapping[str, Any]) -> str:
    for message in reversed(_messages(body)):
        if message.get("role") == "user":
            return message_text(message)
    return ""


def multiply_operands(text: str) -> tuple[int, int] | None:
    """The first two integers in ``text``, or ``None`` when there are fewer than two."""
    found = _INT.findall(text)
    if len(found) < 2:
        return None
    return int(found[0]), int(found[1])


def multiply_solver(body: Mapping[str, Any]) -> Reply:
    messages = _messages(body)
    operands = multiply_operands(last_user_text(body))
    if operands is None:
        return Reply(content="I need two integers to multiply.")
    a, b = operands
    if messages and messages[-1].get("role") == "tool":
        return Reply(content=f"#### {a * b}")
    return Reply(tool_calls=(ToolCall(name="multiply", arguments={"a": a, "b": b}),))


def echo(body: Mapping[str, Any]) -> Reply:
    return Reply(content=last_user_text(body))


def instant_text(text: str) -> Callable[[Mapping[str, Any]], Reply]:
    reply = Reply(content=text)

    def respond(body: Mapping[str, Any]) -> Reply:
        return reply

    return respond


instant = instant_text("ok")

BUILTIN_POLICIES: dict[str, Callable[[Mapping[str, Any]], Reply]] = {
    "multiply": multiply_solver,
    "echo": echo,
    "instant": instant,
}
