"""The rollout's sample, recorded by the model: Pydantic AI's own history plus a chat copy.

Every policy call hands the model the whole conversation so far, so the last call of the
top-level agent plus its response *is* that agent's history. Calls of other agents in the same
rollout (a sub-agent called from a tool) start from a different first message and are not part
of the sample; they still reach the rollout's policy.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.integrations.spi import RolloutSample, SampleSource

if TYPE_CHECKING:
    from osmosis_ai.rollout.integrations.spi import RolloutContext
    from pydantic_ai.messages import ModelMessage, ModelResponse


class PydanticAISampleSource(SampleSource):
    """The sample of one rollout: the top-level agent's conversation as its model saw it."""

    def __init__(self) -> None:
        self._first: ModelMessage | None = None
        self._history: list[ModelMessage] = []
        #: (assistant response, its usage dict or None, the model that answered), per call.
        self._calls: list[ModelResponse] = []

    @classmethod
    def for_rollout(cls, ctx: RolloutContext) -> PydanticAISampleSource | None:
        """The rollout's source: registered now when the rollout has none; ``None`` when the
        rollout takes its sample from elsewhere (``run`` returns messages, another source)."""
        current = ctx.sample_source
        if isinstance(current, cls):
            return current
        if current is not None:
            return None
        source = cls()
        ctx.set_sample_source(source)
        return source

    def record(self, messages: list[ModelMessage], response: ModelResponse) -> None:
        """One completed policy call: ``messages`` went in, ``response`` came back."""
        if not messages:
            return
        if self._first is None:
            self._first = messages[0]
        elif messages[0] is not self._first and messages[0] != self._first:
            return  # another agent's conversation (a sub-agent)
        self._history = [*messages, response]
        self._calls.append(response)

    async def get_sample(self) -> RolloutSample:
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        native = ModelMessagesTypeAdapter.dump_python(self._history, mode="json")
        return RolloutSample(
            messages=native, trajectory_messages=chat_messages(self._history, self._calls)
        )

    async def get_preview(self, max_messages: int) -> RolloutSample | None:
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        tail = self._history[-max_messages:] if max_messages > 0 else []
        native = ModelMessagesTypeAdapter.dump_python(tail, mode="json")
        return RolloutSample(messages=native, trajectory_messages=None)


def _usage(response: ModelResponse) -> dict[str, int] | None:
    usage = response.usage
    prompt = getattr(usage, "input_tokens", None)
    completion = getattr(usage, "output_tokens", None)
    if not prompt and not completion:
        return None
    prompt, completion = int(prompt or 0), int(completion or 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, default=str)


def chat_messages(history: list[ModelMessage], calls: list[ModelResponse]) -> list[dict[str, Any]]:
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
            assistant["model"] = message.model_name or "osmosis-rollout"
            usage = _usage(message)
            if usage is not None:
                assistant["usage"] = usage
        out.append(assistant)
    return out


PydanticAISampleSource.__module__ = "osmosis_ai.rollout.integrations.agents.pydantic_ai"
