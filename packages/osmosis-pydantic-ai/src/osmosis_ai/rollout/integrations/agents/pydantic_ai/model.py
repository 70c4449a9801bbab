"""``OsmosisRolloutModel``: a Pydantic AI ``Model`` that calls the policy of the active rollout.

It is a ``WrapperModel`` around a template ``OpenAIChatModel`` (which answers everything the
agent asks before a request: name, profile, settings, request parameters), and on every request
it delegates to an ``OpenAIChatModel`` bound to the running rollout's ``chat_completions_url``
through core's shared policy client. Pydantic AI does all request formatting and response
parsing.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.integrations.spi import (
    bind_policy,
    policy_model_name,
    share_in_config_copies,
    translating_policy_errors,
)
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer, OpenAIModelProfile
from pydantic_ai.providers.openai import OpenAIProvider

from .sample import PydanticAISampleSource

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models import ModelRequestParameters, StreamedResponse
    from pydantic_ai.profiles import ModelProfileSpec
    from pydantic_ai.settings import ModelSettings

DEFAULT_MODEL_NAME = "osmosis-rollout"
#: Never contacted: the template model only answers questions asked before a request.
_UNUSED_URL = "http://127.0.0.1:9/v1"


class OsmosisRolloutModel(WrapperModel):
    """The policy being trained, as a Pydantic AI model; usable only while a rollout runs.

    Args:
        model_name: The model name sent on the wire (default ``"osmosis-rollout"``; the policy
            server decides what serves it). A LiteLLM-style ``"openai/"`` prefix is dropped.
        settings: Default ``ModelSettings`` (``temperature``, ``max_tokens``, ...), as with any
            Pydantic AI model; agent and run settings override them.
        profile: The Pydantic AI model profile. Default: an OpenAI-compatible chat model with
            sampling parameters and tools, whatever the name (Pydantic AI guesses OpenAI's own
            models from the name: before 2.x any name starting with ``o`` was taken for a
            reasoning model and ``temperature``/``top_p`` were silently dropped).
        timeout: Seconds to wait for each policy response (``None``: the ``openai`` default).
        max_retries: Retries by the ``openai`` client. Default 0: the trainer's endpoint records
            every request it serves, so a silent retry could give one turn two generations.
    """

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL_NAME,
        *,
        settings: ModelSettings | None = None,
        profile: ModelProfileSpec | None = None,
        timeout: float | None = None,
        max_retries: int = 0,
    ) -> None:
        name = policy_model_name(
            model_name, timeout=timeout, max_retries=max_retries, argument="model_name"
        )
        from openai import AsyncOpenAI

        placeholder = AsyncOpenAI(api_key="EMPTY", base_url=_UNUSED_URL, max_retries=0)
        self._policy_profile = profile or OpenAIModelProfile(
            json_schema_transformer=OpenAIJsonSchemaTransformer,
            supports_json_schema_output=True,
            supports_json_object_output=True,
        )
        template = OpenAIChatModel(
            name,
            provider=OpenAIProvider(openai_client=placeholder),
            profile=self._policy_profile,
            settings=settings,
        )
        super().__init__(template)
        self._settings = settings  # older WrapperModels do not forward the wrapped settings
        self.timeout = timeout
        self.max_retries = max_retries
        # One bound model per policy client (core memoises a client per rollout endpoint).
        self._bound: weakref.WeakKeyDictionary[Any, OpenAIChatModel] = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"OsmosisRolloutModel(model_name={self.model_name!r})"

    def _bind(self) -> tuple[OpenAIChatModel, str, PydanticAISampleSource | None]:
        policy = bind_policy(timeout=self.timeout, max_retries=self.max_retries)
        bound = self._bound.get(policy.client)
        if bound is None:
            bound = self._bound[policy.client] = OpenAIChatModel(
                self.model_name,
                provider=OpenAIProvider(openai_client=policy.client),
                profile=self._policy_profile,
                settings=self.wrapped.settings,
            )
        return bound, policy.endpoint, PydanticAISampleSource.for_rollout(policy.context)

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        bound, url, source = self._bind()
        with translating_policy_errors(url, causes=True):  # Pydantic AI wraps openai's errors
            response = await bound.request(messages, model_settings, model_request_parameters)
        if source is not None:
            source.record(messages, response)
        return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        *args: Any,
        **kwargs: Any,
    ) -> AsyncIterator[StreamedResponse]:
        bound, url, source = self._bind()
        with translating_policy_errors(url, causes=True):
            async with bound.request_stream(
                messages, model_settings, model_request_parameters, *args, **kwargs
            ) as streamed:
                yield streamed
        if source is not None:
            source.record(messages, streamed.get())


# The public class reports the package path, as the other integrations do.
OsmosisRolloutModel.__module__ = "osmosis_ai.rollout.integrations.agents.pydantic_ai"


# LocalBackend deep-copies ``workflow_config`` per rollout. Pydantic AI agents are built to be
# module-level and run concurrently (all run state lives in the run) and this model keeps no
# per-rollout state: both are shared, not copied (a copy would clone the template's client).
share_in_config_copies(Agent, OsmosisRolloutModel)
