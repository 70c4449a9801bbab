"""The rollout's sample: ADK's own session events for graders, plus the chat-completions copy.

Every policy call of the model hands it the conversation so far, rendered by :func:`chat_messages`
exactly as it went on the wire; the source keeps the top-level agent's latest one (a call that
starts from another first message is another agent's conversation: a sub-agent run through an
``AgentTool`` or a transfer with its own instruction) as the trajectory, with ``model`` and
``usage`` on each assistant message. :func:`~.runner.run_agent` adds the session's events.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.integrations.spi import RolloutSample, SampleSource

if TYPE_CHECKING:
    from google.adk.events import Event
    from google.genai import types

    from osmosis_ai.rollout.integrations.spi import PolicyCall, RolloutContext


class AdkSampleSource(SampleSource):
    """The sample of one rollout: session events (native) and the main conversation (wire)."""

    def __init__(self) -> None:
        self._wire: list[dict[str, Any]] = []
        self._answers: list[dict[str, Any]] = []
        self._events: list[dict[str, Any]] = []
        #: {tool call id: (the arguments string as the policy wrote it, its parsed value)}.
        self.raw_arguments: dict[str, tuple[str, Any]] = {}

    @classmethod
    def for_rollout(cls, ctx: RolloutContext) -> AdkSampleSource | None:
        """The rollout's source, registered now when it has none; ``None`` when the rollout
        takes its sample from elsewhere (``run`` returns messages, another source)."""
        current = ctx.sample_source
        if isinstance(current, cls):
            return current
        if current is not None:
            return None
        source = cls()
        ctx.set_sample_source(source)
        return source

    def record(
        self, messages: list[dict[str, Any]], answer: Mapping[str, Any], call: PolicyCall
    ) -> None:
        """One completed policy call: ``messages`` went out, ``answer`` came back."""
        for tool_call in answer.get("tool_calls") or ():
            raw = (tool_call.get("function") or {}).get("arguments")
            if tool_call.get("id") and isinstance(raw, str):
                self.raw_arguments[tool_call["id"]] = (raw, _parsed(raw))
        if self._wire and (not messages or messages[0] != self._wire[0]):
            return  # another agent's conversation
        reply: dict[str, Any] = {"role": "assistant", "content": answer.get("content") or ""}
        calls = [_wire_call(c) for c in answer.get("tool_calls") or ()]
        if calls:
            reply["tool_calls"] = calls
        if answer.get("reasoning_content"):
            reply["reasoning_content"] = answer["reasoning_content"]
        reply["model"] = call.model
        if call.usage is not None:
            reply["usage"] = call.usage
        self._answers.append(reply)
        self._wire = [*messages, reply]

    def record_events(self, events: Iterable[Event]) -> None:
        """The top-level run's session events (``Event.model_dump`` JSON), for graders."""
        self._events = [e.model_dump(mode="json", exclude_none=True) for e in events]

    @property
    def events(self) -> list[dict[str, Any]]:
        return list(self._events)

    async def get_sample(self) -> RolloutSample:
        trajectory = self._trajectory()
        # Without events (the workflow ran its own Runner and did not record them), graders get
        # the chat copy as the native history.
        native = self.events or [dict(m) for m in trajectory]
        return RolloutSample(messages=native, trajectory_messages=trajectory or None)

    async def get_preview(self, max_messages: int) -> RolloutSample | None:
        history = self._events or self._wire
        tail = history[-max_messages:] if max_messages > 0 else []
        return RolloutSample(messages=tail, trajectory_messages=None)

    def _trajectory(self) -> list[dict[str, Any]]:
        """The wire conversation; each earlier assistant message gets its own call's ``model``
        and ``usage`` back (the wire copy carries neither)."""
        answers = iter(self._answers)
        out: list[dict[str, Any]] = []
        for message in self._wire:
            if message.get("role") == "assistant" and "model" not in message:
                for answer in answers:
                    if _same_turn(answer, message):
                        message = answer
                        break
            out.append(message)
        return out


def _wire_call(call: Mapping[str, Any]) -> dict[str, Any]:
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


def _parsed(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return {}


def chat_messages(
    contents: Sequence[types.Content],
    system: str | None,
    raw_arguments: Mapping[str, tuple[str, Any]],
) -> list[dict[str, Any]]:
    """ADK's request contents as chat-completions messages: ``model`` turns as assistant
    messages (tool calls with the arguments string the policy wrote, when the call is
    unchanged), function responses as ``tool`` messages, other parts as user text."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for content in contents:
        parts = content.parts or []
        if content.role == "model":
            message: dict[str, Any] = {"role": "assistant", "content": ""}
            texts = [p.text for p in parts if p.text and not p.thought]
            thoughts = [p.text for p in parts if p.text and p.thought]
            calls = [_tool_call(p.function_call, raw_arguments) for p in parts if p.function_call]
            message["content"] = "".join(texts)
            if calls:
                message["tool_calls"] = calls
            if thoughts:
                message["reasoning_content"] = "".join(thoughts)
            out.append(message)
            continue
        for part in parts:
            if part.function_response is not None:
                response = part.function_response
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": response.id or "",
                        "content": _tool_text(response.response),
                    }
                )
        texts = [p.text for p in parts if p.text is not None and p.function_response is None]
        if texts:
            out.append({"role": "user", "content": "".join(texts)})
    return out


def _tool_call(call: types.FunctionCall, raw: Mapping[str, tuple[str, Any]]) -> dict[str, Any]:
    args = call.args or {}
    kept = raw.get(call.id or "")
    arguments = kept[0] if kept is not None and kept[1] == args else json.dumps(args)
    return {
        "id": call.id or "",
        "type": "function",
        "function": {"name": call.name or "", "arguments": arguments},
    }


def _tool_text(response: Any) -> str:
    """A function response as the model reads it: ADK wraps a tool's non-dict return value as
    ``{"result": value}``; that value goes out as it is, anything else as JSON."""
    if isinstance(response, dict) and set(response) == {"result"}:
        response = response["result"]
    return response if isinstance(response, str) else json.dumps(response, default=str)


AdkSampleSource.__module__ = "osmosis_ai.rollout.integrations.agents.adk"
