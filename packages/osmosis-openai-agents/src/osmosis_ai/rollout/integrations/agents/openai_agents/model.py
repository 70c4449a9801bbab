"""``OsmosisRolloutModel``: an ``agents`` Model that calls the policy of the active rollout.

The model is a placeholder with no endpoint of its own. On every call it looks up the active
:class:`~osmosis_ai.rollout.RolloutContext` and delegates to the SDK's own
``OpenAIChatCompletionsModel`` on a client bound to that rollout's ``chat_completions_url``.
Because the binding happens per call, an agent built at import time, cloned, copied, or reached
through a handoff still talks to the rollout that is running it, and 200 concurrent rollouts
sharing one agent object never see each other's endpoint.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from agents.models.interface import Model
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel

from osmosis_ai.rollout.integrations.spi import (
    PolicyCall,
    policy_client,
    policy_model_name,
    require_active_rollout,
    translating_policy_errors,
    usage_dict,
)

from .policy_calls import describe_output
from .session import OsmosisMemorySession, SessionNotRegisteredError
from .tracing import (
    disable_trace_export_unless_opted_in,
)

if TYPE_CHECKING:
    from agents.agent_output import AgentOutputSchemaBase
    from agents.handoffs import Handoff
    from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
    from agents.model_settings import ModelSettings
    from agents.models.interface import ModelTracing
    from agents.tool import Tool

disable_trace_export_unless_opted_in()

DEFAULT_MODEL_NAME = "osmosis-rollout"

_NO_SESSION = (
    "OsmosisRolloutModel was called in rollout {rollout_id!r}, but nothing records the "
    "conversation, so the rollout would have no sample to grade. Pass a session created inside "
    "run(): `await Runner.run(agent, ctx.prompt, session=OsmosisMemorySession())`. (If run() "
    "returns its own messages instead, build the model with "
    "OsmosisRolloutModel(require_session=False).)"
)


class OsmosisRolloutModel(Model):
    """A late-binding ``agents`` Model for the policy being trained.

    Args:
        model: The model name sent on the wire (default ``"osmosis-rollout"``). A LiteLLM-style
            ``"openai/<name>"`` prefix, as used with the public osmosis-ai SDK, is dropped.
        timeout: Seconds to wait for each policy response (``None``: the ``openai`` default).
        max_retries: Retries of a failed policy call by the ``openai`` client. Default 0: the
            trainer's endpoint records every request it serves, so a silent retry could give
            one turn two generations; a failed call fails the rollout as ``http_error`` and the
            trainer decides whether to run it again.
        require_session: Refuse to call the policy unless the rollout has a sample source
            (normally an ``OsmosisMemorySession``), so that a forgotten ``session=`` fails on
            the first call instead of producing a rollout without a sample.

    Sampling parameters come from the agent's ``ModelSettings`` (``temperature``, ``top_p``,
    ``max_tokens``, ``extra_headers``, ``extra_body``, ``extra_args``, ...), exactly as with
    any ``agents`` model.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL_NAME,
        *,
        timeout: float | None = None,
        max_retries: int = 0,
        require_session: bool = True,
    ) -> None:
        self.model = policy_model_name(model, timeout=timeout, max_retries=max_retries)
        self.timeout = timeout
        self.max_retries = max_retries
        self.require_session = require_session

    def __repr__(self) -> str:
        return f"OsmosisRolloutModel(model={self.model!r})"

    # -- binding -----------------------------------------------------------------------------

    def _bind(self) -> _BoundCall:
        ctx = require_active_rollout("OsmosisRolloutModel")
        source = ctx.sample_source
        if source is None and self.require_session:
            raise SessionNotRegisteredError(_NO_SESSION.format(rollout_id=ctx.rollout_id))
        client = policy_client(
            ctx.chat_completions_url,
            ctx.api_key,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )
        session = source if isinstance(source, OsmosisMemorySession) else None
        return _BoundCall(
            model=OpenAIChatCompletionsModel(model=self.model, openai_client=client),
            endpoint=ctx.chat_completions_url.rstrip("/") + "/chat/completions",
            session=session,
            requested_model=self.model,
            position=session.item_count if session is not None else 0,
        )

    def bound_model(self) -> OpenAIChatCompletionsModel:
        """The SDK model this placeholder would delegate to right now (for inspection)."""
        return self._bind().model

    # -- Model API ---------------------------------------------------------------------------

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any | None = None,
        **kwargs: Any,
    ) -> ModelResponse:
        call = self._bind()
        with translating_policy_errors(call.endpoint):
            response = await call.model.get_response(
                system_instructions,
                input,
                model_settings,
                tools,
                output_schema,
                handoffs,
                tracing,
                previous_response_id=previous_response_id,
                conversation_id=conversation_id,
                prompt=prompt,
                **kwargs,
            )
        call.record(response, system_instructions)
        return response

    async def stream_response(  # type: ignore[override]  # an async generator is an AsyncIterator
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[TResponseStreamEvent]:
        call = self._bind()
        if model_settings.include_usage is None:
            # Ask for the usage chunk: the trajectory needs per-call token counts.
            model_settings = dataclasses.replace(model_settings, include_usage=True)
        with translating_policy_errors(call.endpoint):
            async for event in call.model.stream_response(
                system_instructions,
                input,
                model_settings,
                tools,
                output_schema,
                handoffs,
                tracing,
                previous_response_id=previous_response_id,
                conversation_id=conversation_id,
                prompt=prompt,
                **kwargs,
            ):
                if event.type == "response.completed":
                    call.record(event.response, system_instructions)
                yield event


@dataclasses.dataclass(frozen=True, slots=True)
class _BoundCall:
    """One model call bound to the active rollout: the SDK model it delegates to, the endpoint
    its errors name, and the session (if any) that records it at its position in the history."""

    model: OpenAIChatCompletionsModel
    endpoint: str
    session: OsmosisMemorySession | None
    requested_model: str
    position: int

    def record(self, response: Any, instructions: str | None) -> None:
        """Record the call's response (its output and usage) in the session."""
        if self.session is None:
            return
        call_ids, text, model = describe_output(response.output, self.requested_model)
        self.session.record_call(
            PolicyCall(
                model=model,
                usage=usage_dict(response.usage),
                position=self.position,
                instructions=instructions,
                call_ids=call_ids,
                text=text,
            )
        )


class OsmosisLitellmModel(OsmosisRolloutModel):
    """Compatibility name from the public osmosis-ai SDK, which called the policy via LiteLLM.

    It is now the same direct ``openai`` client model as :class:`OsmosisRolloutModel` (LiteLLM
    is not needed); existing code that builds it keeps working.
    """


# 0.3 defined the public classes in the package module itself; report that path.
for _cls in (OsmosisRolloutModel, OsmosisLitellmModel):
    _cls.__module__ = "osmosis_ai.rollout.integrations.agents.openai_agents"


def rollout_model_for(model: Any) -> Any:
    """What an ``OsmosisAgent`` uses for ``model``: ``None`` and names become the policy model.

    A model name or ``None`` would otherwise go through the SDK's process-global default
    provider, i.e. to api.openai.com with the user's ``OPENAI_API_KEY``, not to the policy.
    Explicit ``Model`` instances are kept (an agent may deliberately use another model).
    """
    if model is None:
        return OsmosisRolloutModel()
    if isinstance(model, str):
        return OsmosisRolloutModel(model)
    return model
