"""The rollout's sample: ADK's own session events for graders, plus the chat-completions copy.

Every policy call of the model hands it the conversation so far, rendered by :func:`chat_messages`
exactly as it went on the wire; the source keeps the top-level agent's latest one (a call that
starts from another first message is another agent's conversation: a sub-agent run through an
``AgentTool`` or a transfer with its own instruction) as the trajectory, with ``model`` and
``usage`` on each assistant message. :func:`~.runner.run_agent` adds the session's events.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.integrations.spi import RolloutSample, SampleSource, WireTranscript

if TYPE_CHECKING:
    from google.adk.events import Event
    from google.genai import types


class AdkSampleSource(SampleSource):
    """The sample of one rollout: session events (native) and the main conversation (wire)."""

    def __init__(self) -> None:
        #: The main conversation as it went to the policy (raw tool-call arguments kept).
        self.transcript = WireTranscript()
        self._events: list[dict[str, Any]] = []

    def record_events(self, events: Iterable[Event]) -> None:
        """The top-level run's session events (``Event.model_dump`` JSON), for graders."""
        self._events = [e.model_dump(mode="json", exclude_none=True) for e in events]

    async def get_sample(self) -> RolloutSample:
        wire = self.transcript.messages
        # Without events (the workflow ran its own Runner and did not record them), graders get
        # the chat copy as the native history.
        return RolloutSample(messages=self._events or wire, trajectory_messages=wire or None)

    async def get_preview(self, max_messages: int) -> RolloutSample | None:
        history = self._events or self.transcript.messages
        tail = history[-max_messages:] if max_messages > 0 else []
        return RolloutSample(messages=tail, trajectory_messages=None)


def chat_messages(
    contents: Sequence[types.Content],
    system: str | None,
    transcript: WireTranscript,
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
            calls = [p.function_call for p in parts if p.function_call]
            message["content"] = "".join(texts)
            if calls:
                message["tool_calls"] = [transcript.tool_call(c.id, c.name, c.args) for c in calls]
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


def _tool_text(response: Any) -> str:
    """A function response as the model reads it: ADK wraps a tool's non-dict return value as
    ``{"result": value}``; that value goes out as it is, anything else as JSON."""
    if isinstance(response, dict) and set(response) == {"result"}:
        response = response["result"]
    return response if isinstance(response, str) else json.dumps(response, default=str)


AdkSampleSource.__module__ = "osmosis_ai.rollout.integrations.agents.adk"
