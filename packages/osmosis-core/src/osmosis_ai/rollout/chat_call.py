"""``complete_chat``: one chat-completions call to the policy, streamed or not, in one shape.

An integration whose framework does not speak the ``openai`` client itself (it hands the adapter
its own request type and wants its own response type back) sends the request through this
function: streamed, it yields each text delta as it arrives; either way it ends with a
:class:`ChatAnswer` (the assistant message as a dict, the finish reason, and the
:class:`~osmosis_ai.rollout.policy.PolicyCall` with the serving model and usage). Failures come
out translated as :func:`~osmosis_ai.rollout.policy.translate_policy_error` says.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.policy import CallObserver, PolicyCall, translating_policy_errors

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["ChatAnswer", "complete_chat"]


@dataclass(frozen=True, slots=True)
class ChatAnswer:
    """The end of one policy call: the assistant ``message`` (JSON dict, unset fields left out),
    ``finish_reason`` and the call's record (``call.model``, ``call.usage``)."""

    message: dict[str, Any]
    finish_reason: str | None
    call: PolicyCall


async def complete_chat(
    client: AsyncOpenAI, request: Mapping[str, Any], *, url: str, stream: bool = False
) -> AsyncIterator[str | ChatAnswer]:
    """Send ``request`` (``model``, ``messages``, sampling parameters, ``tools``) with
    ``client`` (core's :func:`~osmosis_ai.rollout.policy.policy_client` for the rollout);
    ``url`` names the endpoint in errors. With ``stream``, token usage is requested too and each
    non-empty text delta is yielded before the final :class:`ChatAnswer`."""
    observer = CallObserver()
    with translating_policy_errors(url):
        if stream:
            from openai.lib.streaming.chat import ChatCompletionStreamState

            state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
            chunks = await client.chat.completions.create(
                **request, stream=True, stream_options={"include_usage": True}
            )
            async for chunk in chunks:
                state.handle_chunk(chunk)
                observer.observe(chunk)
                delta = chunk.choices[0].delta.content if chunk.choices else None
                if delta:
                    yield delta
            completion: Any = state.get_final_completion()
        else:
            completion = await client.chat.completions.create(**request)
    observer.observe(completion)
    choice = completion.choices[0] if completion.choices else None
    message = choice.message.model_dump(mode="json", exclude_none=True) if choice else {}
    yield ChatAnswer(
        message=message,
        finish_reason=choice.finish_reason if choice else None,
        call=observer.record(str(request.get("model") or "")),
    )
