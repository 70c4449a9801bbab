"""``OsmosisRolloutModel``: an ADK ``BaseLlm`` that calls the policy of the active rollout.

ADK hands a model an ``LlmRequest`` (``google.genai`` contents, system instruction, tools,
generation config) and expects ``LlmResponse`` objects back. This model renders the request as
a chat-completions request, sends it through core's shared policy client for the rollout being
run (looked up on every call, so an agent built at import time serves every rollout), and turns
the answer back into genai parts. No LiteLLM: the only wire dependency is ``openai``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from google.adk.agents.base_agent import BaseAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import field_validator

from osmosis_ai.rollout.integrations.spi import (
    CallObserver,
    ConfigurationError,
    policy_client,
    require_active_rollout,
    share_in_config_copies,
    translating_policy_errors,
)

from .sample import AdkSampleSource, chat_messages

if TYPE_CHECKING:
    from google.adk.models.llm_request import LlmRequest

DEFAULT_MODEL_NAME = "osmosis-rollout"
_FINISH = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS"}
# GenerateContentConfig field -> chat-completions parameter.
_PARAMS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "max_output_tokens": "max_tokens",
    "stop_sequences": "stop",
    "seed": "seed",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
}


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

    @field_validator("model")
    @classmethod
    def _model_name(cls, value: str) -> str:
        if not value.strip():
            raise ConfigurationError("OsmosisRolloutModel(model=...) must be a non-empty name")
        return value.removeprefix("openai/")

    @field_validator("timeout")
    @classmethod
    def _timeout(cls, value: float | None) -> float | None:
        if value is not None and not value > 0:
            raise ConfigurationError(f"timeout must be a positive number of seconds; got {value}")
        return value

    @field_validator("max_retries")
    @classmethod
    def _retries(cls, value: int) -> int:
        if value < 0:
            raise ConfigurationError(f"max_retries must be >= 0; got {value}")
        return value

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        ctx = require_active_rollout("OsmosisRolloutModel")
        client = policy_client(
            ctx.chat_completions_url,
            ctx.api_key,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )
        source = AdkSampleSource.for_rollout(ctx)
        raw = source.raw_arguments if source is not None else {}
        messages = chat_messages(llm_request.contents, _system(llm_request.config), raw)
        request: dict[str, Any] = {"model": self.model, "messages": messages}
        request.update(_parameters(llm_request.config))
        url = ctx.chat_completions_url.rstrip("/") + "/chat/completions"
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
                    delta = chunk.choices[0].delta if chunk.choices else None
                    if delta is not None and delta.content:
                        part = types.Part.from_text(text=delta.content)
                        yield LlmResponse(content=_content([part]), partial=True)
                completion = state.get_final_completion()
            else:
                completion = await client.chat.completions.create(**request)
            observer.observe(completion)
        call = observer.record(self.model)
        message = completion.choices[0].message if completion.choices else None
        answer = message.model_dump(mode="json", exclude_none=True) if message else {}
        response = _response(answer, call.usage, call.model)
        if completion.choices:
            reason = _FINISH.get(completion.choices[0].finish_reason or "", "OTHER")
            response.finish_reason = types.FinishReason(reason)
        if source is not None:
            source.record(messages, answer, call)
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
        wire: value
        for name, wire in _PARAMS.items()
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


def _content(parts: list[types.Part]) -> types.Content:
    return types.Content(role="model", parts=parts)


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
        arguments = _arguments(function.get("arguments"))
        parts.append(
            types.Part(
                function_call=types.FunctionCall(
                    id=call.get("id"), name=function.get("name"), args=arguments
                )
            )
        )
    if not parts:
        parts.append(types.Part.from_text(text=""))
    metadata = None
    if usage is not None:
        metadata = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=usage["prompt_tokens"],
            candidates_token_count=usage["completion_tokens"],
            total_token_count=usage["total_tokens"],
        )
    return LlmResponse(content=_content(parts), usage_metadata=metadata, model_version=model)


def _arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments as ADK wants them (a dict); ``{}`` when they are not a JSON
    object (the tool then reports the missing arguments to the model)."""
    try:
        value = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# Neither the model nor an ADK agent keeps per-rollout state (a run's state lives in its session):
# LocalBackend's per-rollout config copies share them instead of deep-copying agent trees.
share_in_config_copies(OsmosisRolloutModel, BaseAgent)

# The public class reports the package path, as the other integrations do.
OsmosisRolloutModel.__module__ = "osmosis_ai.rollout.integrations.agents.adk"
