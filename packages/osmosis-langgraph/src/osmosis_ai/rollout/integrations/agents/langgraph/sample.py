"""``GraphSampleSource``: a rollout's sample, fed by every call of the rollout's chat model.

LangGraph keeps the conversation in the graph's state, which osmosis never sees; every policy
call, though, receives the conversation so far and returns the next message. The source keeps
the latest conversation of the rollout's main thread (the one its first call started): a later
call whose messages begin with the same first message continues it, any other call is a
sub-agent with a conversation of its own, which is not part of the sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.integrations.spi import RolloutSample, SampleSource, usage_dict

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage, BaseMessage

    from .model import OsmosisChatModel


class GraphSampleSource(SampleSource):
    """The sample of one rollout: its main conversation, native and on the wire."""

    def __init__(self) -> None:
        self._messages: list[BaseMessage] = []
        self._model: OsmosisChatModel | None = None

    def record(
        self, model: OsmosisChatModel, messages: Sequence[BaseMessage], answer: AIMessage
    ) -> None:
        """One completed policy call: ``messages`` it was sent, ``answer`` it returned."""
        if self._messages and (not messages or messages[0] != self._messages[0]):
            return  # another conversation (a sub-agent): not this rollout's sample
        self._messages = [*messages, answer]
        self._model = model

    @property
    def messages(self) -> list[BaseMessage]:
        """The main conversation's LangChain messages (system prompt, user, AI, tool, ...)."""
        return list(self._messages)

    async def get_sample(self) -> RolloutSample:
        return RolloutSample(
            messages=[_native(m) for m in self._messages],
            trajectory_messages=self._wire() if self._model is not None else None,
        )

    async def get_preview(self, max_messages: int) -> RolloutSample | None:
        tail = self._messages[-max_messages:] if max_messages > 0 else []
        return RolloutSample(messages=[_native(m) for m in tail], trajectory_messages=None)

    def _wire(self) -> list[dict[str, Any]]:
        assert self._model is not None
        wire: list[dict[str, Any]] = self._model.wire_messages(self._messages)
        for native, message in zip(self._messages, wire, strict=True):
            if message.get("role") != "assistant" or native.type != "ai":
                continue
            model = native.response_metadata.get("model_name")
            message["model"] = model if isinstance(model, str) and model else self._model.model_name
            usage = usage_dict(getattr(native, "usage_metadata", None))
            if usage is not None:
                message["usage"] = usage
        return wire


def _native(message: BaseMessage) -> dict[str, Any]:
    return message.model_dump(mode="json")


GraphSampleSource.__module__ = "osmosis_ai.rollout.integrations.agents.langgraph"
