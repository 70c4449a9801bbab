"""``WireTranscript``: a rollout's main conversation as it went to the policy, for integrations
that render chat-completions messages themselves.

A framework that keeps its history in its own types (ADK's genai contents, a hand-written loop's
records) renders it as chat messages on every policy call. Two things about that are the same
for every such integration, and live here:

* **the raw tool-call arguments.** A framework parses the policy's ``arguments`` string into a
  value and, on the next call, renders that value again; ``json.dumps`` gives other bytes than
  the policy wrote (``{"a":2}`` -> ``{"a": 2}``) and the rollout stops being append-only.
  :meth:`WireTranscript.arguments` gives back the policy's own string for an unchanged call;
* **the trajectory.** Each call hands over the messages it sent and the answer it got; the
  transcript keeps the conversation of the rollout's first thread (a call that starts from
  another first message is another agent's conversation: a sub-agent), with the serving
  ``model`` and ``usage`` on each assistant message of that thread.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from osmosis_ai.rollout.policy import PolicyCall

__all__ = ["WireTranscript"]

_META = ("model", "usage")


class WireTranscript:
    """The main conversation of one rollout, on the wire, with per-call ``model`` and ``usage``."""

    def __init__(self) -> None:
        self._wire: list[dict[str, Any]] = []
        self._answers: list[dict[str, Any]] = []
        #: {tool call id: (the arguments string the policy wrote, its parsed JSON value)}
        self._raw: dict[str, tuple[str, Any]] = {}

    def arguments(self, call_id: str | None, value: Any) -> str:
        """The ``arguments`` string to send for a tool call whose arguments are now ``value``:
        the policy's own string when the value is unchanged, else ``json.dumps(value)``."""
        kept = self._raw.get(call_id or "")
        return kept[0] if kept is not None and kept[1] == value else json.dumps(value)

    def tool_call(self, call_id: str | None, name: str | None, value: Any) -> dict[str, Any]:
        """A framework's tool call (its id, tool name and arguments now ``value``) as a
        chat-completions ``tool_calls`` entry, its ``arguments`` string from :meth:`arguments`
        (``None`` arguments are ``{}``)."""
        arguments = self.arguments(call_id, {} if value is None else value)
        return {
            "id": call_id or "",
            "type": "function",
            "function": {"name": name or "", "arguments": arguments},
        }

    @staticmethod
    def parse_arguments(raw: Any) -> dict[str, Any]:
        """A tool call's ``arguments`` string as a dict (what frameworks hand a tool); ``{}``
        when it is not a JSON object (the tool then reports the missing arguments)."""
        try:
            value = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    def record(
        self, messages: Sequence[Mapping[str, Any]], answer: Mapping[str, Any], call: PolicyCall
    ) -> bool:
        """One completed policy call: ``messages`` were sent, ``answer`` (the response's
        assistant message as a dict) came back, ``call`` says who served it and the usage.
        Returns whether the call continued the main conversation."""
        tool_calls = [_tool_call(c) for c in answer.get("tool_calls") or ()]
        for tool_call in tool_calls:
            raw = tool_call["function"]["arguments"]
            if tool_call["id"] and isinstance(raw, str):
                self._raw[tool_call["id"]] = (raw, self.parse_arguments(raw))
        if self._wire and (not messages or dict(messages[0]) != self._wire[0]):
            return False
        reply: dict[str, Any] = {"role": "assistant", "content": answer.get("content") or ""}
        if tool_calls:
            reply["tool_calls"] = tool_calls
        if answer.get("reasoning_content"):
            reply["reasoning_content"] = answer["reasoning_content"]
        reply["model"] = call.model
        if call.usage is not None:
            reply["usage"] = call.usage
        self._answers.append(reply)
        self._wire = [*(dict(m) for m in messages), reply]
        return True

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation; each assistant message carries its own call's ``model`` and
        ``usage`` (the messages sent on the wire carry neither)."""
        answers = iter(self._answers)
        out: list[dict[str, Any]] = []
        for message in self._wire:
            if message.get("role") == "assistant" and "model" not in message:
                message = next((a for a in answers if _same_turn(a, message)), message)
            out.append(message)
        return out


def _tool_call(call: Mapping[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    return {
        "id": call.get("id") or "",
        "type": "function",
        "function": {"name": function.get("name") or "", "arguments": function.get("arguments")},
    }


def _same_turn(answer: Mapping[str, Any], message: Mapping[str, Any]) -> bool:
    return (answer.get("content") or "") == (message.get("content") or "") and answer.get(
        "tool_calls"
    ) == message.get("tool_calls")
