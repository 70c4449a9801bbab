"""``OsmosisRolloutModel``: an ADK ``BaseLlm`` that calls the policy of the active rollout.

ADK hands a model an ``LlmRequest`` (``google.genai`` contents, system instruction, tools,
generation config) and expects ``LlmResponse`` objects back. This model renders the request as
a chat-completions request, sends it through core's shared policy client for the rollout being
run (looked up on every call, so an agent built at import time serves every rollout), and turns
the answer back into genai parts. No LiteLLM: the only wire dependency is ``openai``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from google.adk.agents.base_agent import BaseAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from osmosis_ai.rollout.integrations.spi import (
    WireTranscript,
    bind_policy,
    complete_chat,
    policy_model_name,
    share_in_config_copies,
)

from .sample import AdkSampleSource, chat_messages

if TYPE_CHECKING:
    from google.adk.models.llm_request import LlmRequest

DEFAULT_MODEL_NAME = "osmosis-rollout"
_FINISH = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS"}
# GenerateContentConfig fields sent as sampling parameters, and the two named otherwise on the wire.
_SAMPLING = ("temperature", "top_p", "max_output_tokens", "stop_sequences", "seed")
_PENALTIES = ("presence_penalty", "frequency_penalty")
_WIRE_NAMES = {"max_output_tokens": "max_tokens", "stop_sequences": "stop"}


class OsmosisRolloutModel(BaseLlm):
    """The policy being trained, as an ADK model; usable only while a rollout runs.

    ``LlmAgent(model=OsmosisRolloutModel(), ...)``. ``model`` is the name sent on the wire
    (default ``"osmosis-rollout"``; a LiteLLM-style ``"openai/"`` prefix is dropped). Sampling
    parameters come from the agent's ``generate_content_config`` (``temperature``,
    ``max_output_tokens``, ``top_p``, ``stop_sequences``, ``seed``, penalties). ``timeout`` is
    the seconds to wait for each policy response; ``max_retries`` defaults to 0 (the trainer's
    endpoint records every request it serves, so a silent retry could give one turn two
    generations).
    """

    model: str = DEFAULT_MODEL_NAME
    timeout: float | None = None
    max_retries: int = 0

    def model_post_init(self, context: Any, /) -> None:
        self.model = policy_model_name(
            self.model, timeout=self.timeout, max_retries=self.max_retries
        )

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        policy = bind_policy(timeout=self.timeout, max_retries=self.max_retries)
        source = AdkSampleSource.for_rollout(policy.context)
        transcript = source.transcript if source is not None else WireTranscript()
        messages = chat_messages(llm_request.contents, _system(llm_request.config), transcript)
        request: dict[str, Any] = {"model": self.model, "messages": messages}
        request.update(_parameters(llm_request.config))
        chat = complete_chat(policy.client, request, url=policy.endpoint, stream=stream)
        async for item in chat:
            if isinstance(item, str):
                delta = types.Content(role="model", parts=[types.Part.from_text(text=item)])
                yield LlmResponse(content=delta, partial=True)
                continue
            response = _response(item.message, item.call.usage, item.call.model)
            reason = _FINISH.get(item.finish_reason or "", "OTHER")
            response.finish_reason = types.FinishReason(reason)
            transcript.record(messages, item.message, item.call)
            yield response


def _system(config: types.GenerateContentConfig | None) -> str | None:
    instruction: Any = config.system_instruction if config is not None else None
    if instruction is None or isinstance(instruction, str):
        return instruction
    parts = instruction.parts if isinstance(instruction, types.Content) else instruction
    if not isinstance(parts, list):
        parts = [parts]
    return "".join(p if isinstance(p, str) else (getattr(p, "text", None) or "") for p in parts)


def _parameters(config: types.GenerateContentConfig | None) -> dict[str, Any]:
    if config is None:
        return {}
    out = {
        _WIRE_NAMES.get(name, name): value
        for name in (*_SAMPLING, *_PENALTIES)
        if (value := getattr(config, name, None)) is not None
    }
    tools = [
        {"type": "function", "function": _function(declaration)}
        for tool in config.tools or ()
        for declaration in getattr(tool, "function_declarations", None) or ()
    ]
    if tools:
        out["tools"] = tools
    return out


def _function(declaration: types.FunctionDeclaration) -> dict[str, Any]:
    """A genai function declaration as a chat-completions function (JSON schema parameters)."""
    schema: Any = getattr(declaration, "parameters_json_schema", None)
    if schema is None and declaration.parameters is not None:
        schema = _lower_types(
            declaration.parameters.model_dump(mode="json", exclude_none=True, by_alias=True)
        )
    function: dict[str, Any] = {
        "name": declaration.name,
        "parameters": schema or {"type": "object", "properties": {}},
    }
    if declaration.description:
        function["description"] = declaration.description
    return function


def _lower_types(schema: Any) -> Any:
    """genai's ``Schema`` spells types in capitals (``OBJECT``); JSON schema in lower case."""
    if isinstance(schema, dict):
        return {
            key: value.lower() if key == "type" and isinstance(value, str) else _lower_types(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [_lower_types(item) for item in schema]
    return schema


def _response(answer: dict[str, Any], usage: dict[str, int] | None, model: str) -> LlmResponse:
    """The policy's assistant message as an ADK response (tool calls keep the policy's ids)."""
    parts: list[types.Part] = []
    reasoning = answer.get("reasoning_content") or answer.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        parts.append(types.Part(text=reasoning, thought=True))
    if answer.get("content"):
        parts.append(types.Part.from_text(text=answer["content"]))
    for call in answer.get("tool_calls") or ():
        function = call.get("function") or {}
        args = WireTranscript.parse_arguments(function.get("arguments"))
        parsed = types.FunctionCall(id=call.get("id"), name=function.get("name"), args=args)
        parts.append(types.Part(function_call=parsed))
    if not parts:
        parts.append(types.Part.from_text(text=""))
    metadata = None
    if usage is not None:
        metadata = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=usage["prompt_tokens"],
            candidates_token_count=usage["completion_tokens"],
            total_token_count=usage["total_tokens"],
        )
    content = types.Content(role="model", parts=parts)
    return LlmResponse(content=content, usage_metadata=metadata, model_version=model)


# Neither the model nor an ADK agent keeps per-rollout state (a run's state lives in its session):
# LocalBackend's per-rollout config copies share them instead of deep-copying agent trees.
share_in_config_copies(OsmosisRolloutModel, BaseAgent)

# The public class reports the package path, as the other integrations do.
OsmosisRolloutModel.__module__ = "osmosis_ai.rollout.integrations.agents.adk"
