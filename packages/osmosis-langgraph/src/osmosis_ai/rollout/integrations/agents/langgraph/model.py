"""``OsmosisChatModel``: a ``ChatOpenAI`` that calls the policy of the active rollout.

The model has no endpoint of its own. On every call it binds to the active
:class:`~osmosis_ai.rollout.RolloutContext` (core's ``bind_policy``) and runs ``ChatOpenAI``'s
own request code on a shallow copy of itself whose clients are core's policy client for that
rollout (one pool per event loop, header hygiene, no retries). Because the binding happens per
call, a graph compiled at import time serves every rollout, and 200 concurrent rollouts sharing
one model never see each other's endpoint.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages import message_chunk_to_message as to_message
from langchain_core.outputs import ChatGenerationChunk
from langchain_openai import ChatOpenAI
from langgraph.pregel import Pregel
from pydantic import PrivateAttr

from osmosis_ai.rollout.integrations.spi import (
    bind_policy,
    require_active_rollout,
    restore_tool_arguments,
    run_blocking,
    share_in_config_copies,
    strict_chat_messages,
    translating_policy_errors,
)

from .sample import GraphSampleSource

if TYPE_CHECKING:
    from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
    from langchain_core.outputs import ChatResult

DEFAULT_MODEL_NAME = "osmosis-rollout"
_PLACEHOLDER_URL = "http://osmosis-rollout.invalid/v1"
#: additional_kwargs key: {tool call id: the arguments string exactly as the policy wrote it}.
RAW_ARGUMENTS = "osmosis_raw_tool_arguments"


class _Unbound:
    """Stands in for ``ChatOpenAI``'s clients outside a call, so none is built at construction
    (and nothing from the user's ``OPENAI_*`` environment is ever used)."""

    def __bool__(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        require_active_rollout("OsmosisChatModel")
        raise AttributeError(name)


class OsmosisChatModel(ChatOpenAI):
    """A late-binding ``ChatOpenAI`` for the policy being trained.

    Construct it like ``ChatOpenAI`` (``temperature``, ``max_tokens``, ``model_kwargs``, ...);
    ``model`` is the name sent on the wire (default ``"osmosis-rollout"``, a LiteLLM-style
    ``"openai/"`` prefix is dropped), ``timeout`` applies to each policy call and ``max_retries``
    defaults to 0 (the trainer's endpoint records every request it serves). ``base_url`` and
    ``api_key`` are ignored: every call goes to the active rollout's endpoint with its key.
    Token usage is requested when streaming (``stream_usage=True``), for the trajectory.
    """

    _bound: bool = PrivateAttr(default=False)

    def __init__(self, model: str = DEFAULT_MODEL_NAME, **kwargs: Any) -> None:
        unbound = _Unbound()
        kwargs.update(base_url=_PLACEHOLDER_URL, api_key="EMPTY", client=unbound)
        kwargs.update(async_client=unbound, root_client=unbound, root_async_client=unbound)
        kwargs.setdefault("max_retries", 0)
        kwargs.setdefault("stream_usage", True)
        super().__init__(model=model.removeprefix("openai/"), **kwargs)

    def _bind(self) -> tuple[OsmosisChatModel, str, GraphSampleSource | None]:
        timeout = self.request_timeout
        policy = bind_policy(
            "OsmosisChatModel",
            timeout=timeout if isinstance(timeout, int | float) else None,
            max_retries=self.max_retries or 0,
        )
        client = policy.client
        bound = self.model_copy(
            update={"root_async_client": client, "async_client": client.chat.completions}
        )
        bound._bound = True
        return bound, policy.endpoint, GraphSampleSource.for_rollout(policy.context)

    def _record(self, source: GraphSampleSource | None, messages: list, build: Callable) -> None:
        if source is not None and source.record_later(messages, build):
            source.model = self

    def _get_request_payload(
        self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any
    ) -> dict:  # type: ignore[override]
        """ChatOpenAI's payload, with each earlier tool call's arguments as the policy wrote them
        (ChatOpenAI re-renders parsed arguments with ``json.dumps``)."""
        payload = super()._get_request_payload(input_, stop=stop, **kwargs)
        raw: dict[str, str] = {}
        messages = input_ if isinstance(input_, list) else self._convert_input(input_).to_messages()
        for message in messages:
            if isinstance(message, AIMessage):
                raw.update(message.additional_kwargs.get(RAW_ARGUMENTS) or {})
        restore_tool_arguments(payload.get("messages"), raw)
        return payload

    def _create_chat_result(self, response: Any, generation_info: dict | None = None) -> ChatResult:
        result = super()._create_chat_result(response, generation_info)
        choices: list[Any] = _get(response, "choices") or []
        for choice, generation in zip(choices, result.generations, strict=False):
            calls = _get(_get(choice, "message"), "tool_calls")
            raw = {_get(c, "id"): _get(_get(c, "function"), "arguments") for c in calls or ()}
            if raw:
                generation.message.additional_kwargs[RAW_ARGUMENTS] = raw
        return result

    def wire_messages(self, messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
        """``messages`` as this model sends them to a chat-completions endpoint (after core's
        policy client has shaped them for strict servers)."""
        return list(strict_chat_messages(self._get_request_payload(list(messages))["messages"]))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self._bound:
            return await super()._agenerate(messages, stop, run_manager, **kwargs)
        bound, endpoint, source = self._bind()
        with translating_policy_errors(endpoint):
            result = await bound._agenerate(messages, stop, run_manager, **kwargs)
        if result.generations:
            self._record(source, messages, lambda: result.generations[0].message)
        return result

    async def _astream(  # type: ignore[override]  # an async generator is an AsyncIterator
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        if self._bound:
            async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
                yield chunk
            return
        bound, endpoint, source = self._bind()
        chunks: list[ChatGenerationChunk] = []
        with translating_policy_errors(endpoint):  # each chunk goes on when the next arrives
            async for chunk in bound._astream(messages, stop, run_manager, **kwargs):
                if chunks:
                    yield chunks[-1]
                chunks.append(chunk)
        if not chunks:
            return
        calls = [c.message for c in chunks if getattr(c.message, "tool_call_chunks", None)]
        pieces = getattr(calls[0] + calls[1:], "tool_call_chunks", ()) if calls else ()
        raw = {c["id"]: c["args"] for c in pieces if c.get("id") and c.get("args")}
        if raw:  # on the last chunk: the caller's merged message keeps the policy's arguments
            chunks[-1].message.additional_kwargs[RAW_ARGUMENTS] = raw
        yield chunks[-1]
        # Merged for the sample only when read (the caller merges the chunks for itself).
        self._record(source, messages, lambda: to_message((chunks[0] + chunks[1:]).message))

    # The blocking API runs the same async code on a private loop (the policy client is async).

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return run_blocking(self._agenerate(messages, stop, None, **kwargs))

    def _stream(  # type: ignore[override]
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        async def collect() -> list[ChatGenerationChunk]:
            return [c async for c in self._astream(messages, stop, None, **kwargs)]

        for chunk in run_blocking(collect(), thread_name="osmosis-langgraph-call"):
            if run_manager is not None:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


# A compiled graph and this model hold no per-rollout state (and a deep copy of a compiled graph
# breaks its sentinels): LocalBackend's per-rollout config copies share them.
share_in_config_copies(Pregel, OsmosisChatModel)

# The name the other integrations use for their late-binding model.
OsmosisRolloutModel = OsmosisChatModel
OsmosisChatModel.__module__ = "osmosis_ai.rollout.integrations.agents.langgraph"
