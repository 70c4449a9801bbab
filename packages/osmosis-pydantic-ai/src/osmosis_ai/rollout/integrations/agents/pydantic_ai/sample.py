"""The rollout's sample, recorded by the model: Pydantic AI's own history plus a chat copy.

Every policy call hands the model the whole conversation so far, so the last call of the
top-level agent plus its response *is* that agent's history. Calls of other agents in the same
rollout (a sub-agent called from a tool) start from a different first message and are not part
of the sample; they still reach the rollout's policy.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.integrations.spi import ConversationSampleSource, PolicyCall, usage_dict

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage


class PydanticAISampleSource(ConversationSampleSource["ModelMessage"]):
    """The sample of one rollout: the top-level agent's conversation as its model saw it."""

    def native(self, messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        return ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")

    def wire(self) -> list[dict[str, Any]] | None:
        return chat_messages(self.history, self.answers)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, default=str)


def chat_messages(
    history: Sequence[ModelMessage], calls: Sequence[ModelMessage]
) -> list[dict[str, Any]]:
    """``history`` in chat-completions form (as ``OpenAIChatModel`` sends it: instructions
    first, tool results as ``tool`` messages), with ``model`` and ``usage`` of the call that
    produced each assistant message."""
    from pydantic_ai.messages import (
        ModelRequest,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    out: list[dict[str, Any]] = []
    instructions = next(
        (
            m.instructions
            for m in reversed(history)
            if isinstance(m, ModelRequest) and m.instructions
        ),
        None,
    )
    if instructions:
        out.append({"role": "system", "content": instructions})
    produced = {id(call) for call in calls}
    for message in history:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, SystemPromptPart):
                    out.append({"role": "system", "content": part.content})
                elif isinstance(part, UserPromptPart):
                    out.append({"role": "user", "content": _text(part.content)})
                elif isinstance(part, ToolReturnPart):
                    out.append(
                        {
                            "role": "tool",
                            "tool_call_id": part.tool_call_id,
                            "content": part.model_response_str(),
                        }
                    )
                elif isinstance(part, RetryPromptPart) and part.tool_name is not None:
                    out.append(
                        {
                            "role": "tool",
                            "tool_call_id": part.tool_call_id,
                            "content": part.model_response(),
                        }
                    )
                elif callable(feedback := getattr(part, "model_response", None)):
                    # Retry feedback that answers no tool call (RetryPromptPart without a tool,
                    # 2.x's RetryFeedbackPart) goes to the model as a user message.
                    out.append({"role": "user", "content": feedback()})
            continue
        texts = [p.content for p in message.parts if isinstance(p, TextPart)]
        tool_calls = [
            {
                "id": p.tool_call_id,
                "type": "function",
                "function": {"name": p.tool_name, "arguments": p.args_as_json_str()},
            }
            for p in message.parts
            if isinstance(p, ToolCallPart)
        ]
        assistant: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
        if tool_calls:
            assistant["tool_calls"] = tool_calls
        if id(message) in produced:
            call = PolicyCall(message.model_name or "osmosis-rollout", usage_dict(message.usage))
            call.annotate(assistant)
        out.append(assistant)
    return out


PydanticAISampleSource.__module__ = "osmosis_ai.rollout.integrations.agents.pydantic_ai"
