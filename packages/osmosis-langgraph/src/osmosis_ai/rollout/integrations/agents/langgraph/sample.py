"""``GraphSampleSource``: a rollout's sample, fed by every call of the rollout's chat model.

LangGraph keeps the conversation in the graph's state, which osmosis never sees; every policy
call, though, receives the conversation so far and returns the next message, so core's
:class:`~osmosis_ai.rollout.integrations.spi.ConversationSampleSource` keeps the rollout's main
conversation (a sub-agent's calls are left out).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.integrations.spi import ConversationSampleSource, PolicyCall, usage_dict

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from .model import OsmosisChatModel


class GraphSampleSource(ConversationSampleSource["BaseMessage"]):
    """The sample of one rollout: its main conversation, native (``message.model_dump()``) and
    as ``ChatOpenAI`` puts it on the wire, ``model`` and ``usage`` on each assistant message."""

    def __init__(self) -> None:
        super().__init__()
        #: The model that made the main conversation's last call (it renders the wire form).
        self.model: OsmosisChatModel | None = None

    @property
    def messages(self) -> list[BaseMessage]:
        """The main conversation's LangChain messages (system prompt, user, AI, tool, ...)."""
        return list(self.history)

    def native(self, messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
        return [message.model_dump(mode="json") for message in messages]

    def wire(self) -> list[dict[str, Any]] | None:
        if self.model is None:
            return None
        wire = self.model.wire_messages(self.history)
        for native, message in zip(self.history, wire, strict=True):
            if message.get("role") == "assistant" and native.type == "ai":
                name = native.response_metadata.get("model_name")
                name = name if isinstance(name, str) and name else self.model.model_name
                PolicyCall(name, usage_dict(getattr(native, "usage_metadata", None))).annotate(
                    message
                )
        return wire


GraphSampleSource.__module__ = "osmosis_ai.rollout.integrations.agents.langgraph"
