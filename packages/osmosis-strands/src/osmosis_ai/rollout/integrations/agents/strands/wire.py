"""The client handed to Strands' ``OpenAIModel``: the real ``AsyncOpenAI``, observed.

Strands reads the usage of a call only into its own metrics and never keeps the ``model`` the
policy answered with, yet the trajectory needs both on every assistant message. Wrapping the
client (``OpenAIModel(client=...)`` is a documented injection point) lets core's
:class:`~osmosis_ai.rollout.policy.CallObserver` read each response without re-implementing
Strands' request formatting or stream parsing. The wrapper also fixes two
wire-level problems of older Strands releases:

* ``stream_options`` is sent even when ``stream`` is false; strict servers (vLLM) reject that
  with HTTP 400, so it is dropped from non-streaming requests;
* before strands-agents 1.45 ``OpenAIModel.stream`` can only iterate a stream, so a
  non-streaming response is also made iterable as one equivalent chunk. Newer releases read the
  completion's attributes directly, which the wrapper passes through.

It also sends earlier tool calls' arguments back exactly as the policy wrote them
(:mod:`._raw_arguments`): Strands re-renders them with ``json.dumps``. And it sends what the
model produced, in the shape strict servers accept: Strands replaces an empty assistant reply by
the placeholder ``[blank text]``, a text the model never wrote (it breaks the trajectory's token
exactness), which goes back as the empty string (the policy client then sends text-only content
as a string: core's ``strict_chat_messages``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

#: What Strands' event loop puts in an assistant message the model left empty.
BLANK_TEXT_PLACEHOLDER = "[blank text]"

if TYPE_CHECKING:
    from osmosis_ai.rollout.integrations.spi import CallObserver

    from ._raw_arguments import RawToolArguments, StreamedCalls


class ObservedClient:
    """``client.chat.completions.create`` observed; every other attribute is the real client's."""

    def __init__(
        self, client: Any, observer: CallObserver, raw_arguments: RawToolArguments | None = None
    ) -> None:
        self._client = client
        self.chat = _Chat(client.chat, observer, raw_arguments)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class _Chat:
    def __init__(
        self, chat: Any, observer: CallObserver, raw_arguments: RawToolArguments | None
    ) -> None:
        self._chat = chat
        self.completions = _Completions(chat.completions, observer, raw_arguments)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._chat, name)


class _Completions:
    def __init__(
        self, completions: Any, observer: CallObserver, raw_arguments: RawToolArguments | None
    ) -> None:
        self._completions = completions
        self._observer = observer
        self._raw = raw_arguments

    def __getattr__(self, name: str) -> Any:
        return getattr(self._completions, name)

    async def create(self, **request: Any) -> Any:
        raw = self._raw
        if raw is not None:
            raw.restore(request.get("messages"))
        if "messages" in request:
            request["messages"] = _without_placeholder(request["messages"])
        if not request.get("stream"):
            request.pop("stream_options", None)
            completion = await self._completions.create(**request)
            self._observer.observe(completion)
            if raw is not None:
                raw.observe_completion(completion)
            return _IterableCompletion(completion)
        stream = await self._completions.create(**request)
        return _ObservedStream(stream, self._observer, raw)


def _without_placeholder(messages: Any) -> Any:
    """Assistant text parts that hold only Strands' placeholder become empty text again."""
    if not isinstance(messages, list):
        return messages
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and part.get("text") == BLANK_TEXT_PLACEHOLDER:
                    part["text"] = ""
    return messages


class _ObservedStream:
    """An ``AsyncStream`` whose chunks are observed as they pass.

    ``__aiter__`` returns one shared iterator because Strands iterates the same response twice
    (up to ``finish_reason``, then again to drain the trailing usage chunk).
    """

    def __init__(
        self, stream: Any, observer: CallObserver, raw_arguments: RawToolArguments | None
    ) -> None:
        self._stream = stream
        self._observer = observer
        self._iterator: AsyncIterator[Any] | None = None
        self._calls: StreamedCalls | None = (
            raw_arguments.stream_collector() if raw_arguments is not None else None
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __aiter__(self) -> _ObservedStream:
        return self

    async def __anext__(self) -> Any:
        if self._iterator is None:
            self._iterator = aiter(self._stream)
        chunk = await anext(self._iterator)
        self._observer.observe(chunk)
        if self._calls is not None:
            self._calls.add_chunk(chunk)
        return chunk


class _IterableCompletion:
    """A ``ChatCompletion`` that can also be iterated as the one equivalent stream chunk."""

    def __init__(self, completion: Any) -> None:
        self._completion = completion
        self._consumed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._completion, name)

    def __aiter__(self) -> _IterableCompletion:
        return self

    async def __anext__(self) -> Any:
        # Single-shot across repeated ``async for`` loops, like the stream it stands in for.
        if self._consumed:
            raise StopAsyncIteration
        self._consumed = True
        return _as_chunk(self._completion)


def _as_chunk(completion: Any) -> SimpleNamespace:
    choices = []
    for index, choice in enumerate(getattr(completion, "choices", None) or []):
        message = choice.message
        tool_calls = [
            SimpleNamespace(
                index=position,
                id=call.id,
                type="function",
                function=SimpleNamespace(
                    name=call.function.name, arguments=call.function.arguments
                ),
            )
            for position, call in enumerate(getattr(message, "tool_calls", None) or [])
        ]
        delta = SimpleNamespace(
            role="assistant",
            content=getattr(message, "content", None),
            reasoning_content=getattr(message, "reasoning_content", None),
            tool_calls=tool_calls or None,
        )
        choices.append(
            SimpleNamespace(
                index=getattr(choice, "index", index),
                delta=delta,
                finish_reason=getattr(choice, "finish_reason", None)
                or ("tool_calls" if tool_calls else "stop"),
            )
        )
    return SimpleNamespace(
        id=getattr(completion, "id", ""),
        model=getattr(completion, "model", ""),
        choices=choices,
        usage=getattr(completion, "usage", None),
    )
