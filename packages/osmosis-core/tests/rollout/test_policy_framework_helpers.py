"""What the policy layer gives a framework model: binding, option checks, error translation
through a framework's own wrapper, raw tool arguments, blocking calls and the conversation
sample source (used by the LangGraph and Pydantic AI integrations, and Strands / OpenAI Agents
where they had the same code)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import httpx
import pytest

from osmosis_ai.errors import ConfigurationError, NoActiveRolloutError, PolicyTimeoutError
from osmosis_ai.rollout.context import ConversationSampleSource, RolloutContext
from osmosis_ai.rollout.policy import (
    PolicyCall,
    bind_policy,
    policy_model_name,
    restore_tool_arguments,
    run_blocking,
    translating_policy_errors,
)

URL = "http://127.0.0.1:1/v1/rollouts/r1"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"name": " "}, r"MyModel\(model_name=...\) must be a non-empty model name; got ' '"),
        ({"name": "m", "max_retries": -1}, "max_retries must be >= 0; got -1"),
        ({"name": "m", "timeout": 0}, "timeout must be a positive number of seconds; got 0"),
    ],
)
def test_model_options_are_checked_with_a_message_that_names_the_fix(
    kwargs: dict[str, Any], match: str
) -> None:
    with pytest.raises(ConfigurationError, match=match):
        policy_model_name(**kwargs, caller="MyModel", argument="model_name")


def test_the_litellm_provider_prefix_is_dropped() -> None:
    assert policy_model_name("openai/qwen3") == "qwen3"
    assert policy_model_name("qwen3", timeout=5, max_retries=2) == "qwen3"


async def test_a_binding_is_the_active_rollouts_context_client_and_endpoint() -> None:
    pytest.importorskip("openai")
    with pytest.raises(NoActiveRolloutError, match="MyModel was called outside a rollout"):
        bind_policy("MyModel")
    with RolloutContext(chat_completions_url=URL + "/", api_key="secret-key") as ctx:
        policy = bind_policy("MyModel", timeout=3.0)
    assert policy.context is ctx
    assert policy.url == URL + "/"
    assert policy.endpoint == URL + "/chat/completions"
    assert str(policy.client.base_url).rstrip("/") == URL
    assert policy.client.api_key == "secret-key"
    assert policy.client.timeout == 3.0


class FrameworkError(Exception):
    """A framework's own wrapper of the client's failure (Pydantic AI's ModelAPIError)."""


def test_causes_translates_a_wrapped_policy_failure_and_nothing_else() -> None:
    def wrapped() -> None:
        try:
            raise httpx.ReadTimeout("read timed out")
        except httpx.ReadTimeout as exc:
            raise FrameworkError("the model failed") from exc

    with pytest.raises(FrameworkError), translating_policy_errors(URL):
        wrapped()  # without causes=True the framework's error stands
    with pytest.raises(PolicyTimeoutError) as caught, translating_policy_errors(URL, causes=True):
        wrapped()
    assert isinstance(caught.value.__cause__, FrameworkError)
    assert caught.value.url == URL
    with pytest.raises(KeyError), translating_policy_errors(URL, causes=True):
        raise KeyError("the agent's own bug")


def test_raw_tool_arguments_come_back_only_where_the_value_is_the_same() -> None:
    function = {"name": "multiply", "arguments": '{"a": 2, "b": 3}'}
    messages = [
        {"role": "user", "content": "2*3?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": function}]},
        {"role": "assistant", "tool_calls": [{"id": "c2", "function": {"arguments": '{"a": 9}'}}]},
        {"role": "assistant", "tool_calls": [{"id": "c3", "function": {"arguments": "{}"}}]},
    ]
    raw = {"c1": '{"a":2,"b":3}', "c2": '{"a":1}', "c3": ""}
    assert restore_tool_arguments(messages, raw) is messages
    calls = [m["tool_calls"][0]["function"]["arguments"] for m in messages[1:]]
    assert calls == ['{"a":2,"b":3}', '{"a": 9}', ""]  # c2 was changed by the workflow: kept
    assert function["arguments"] == '{"a": 2, "b": 3}'  # the framework's dict is not mutated
    assert restore_tool_arguments("not a list", raw) == "not a list"


def test_blocking_code_reaches_the_rollout_with_or_without_a_running_loop() -> None:
    async def rollout_id() -> str | None:
        from osmosis_ai.rollout.context import get_rollout_context

        ctx = get_rollout_context()
        return ctx.rollout_id if ctx is not None else None

    with RolloutContext(chat_completions_url=URL, rollout_id="r7"):
        assert run_blocking(rollout_id()) == "r7"

        async def inside_a_loop() -> str | None:
            return run_blocking(rollout_id())  # a thread: this loop is busy

        assert asyncio.run(inside_a_loop()) == "r7"

    async def fails() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        asyncio.run(asyncio.to_thread(run_blocking, fails()))


class TextSource(ConversationSampleSource[str]):
    def native(self, messages: Sequence[str]) -> list[dict[str, Any]]:
        return [{"text": m} for m in messages]

    def wire(self) -> list[dict[str, Any]] | None:
        out = [{"role": "user", "content": m} for m in self.history]
        for message, answer in zip(out, self.history, strict=True):
            if answer in self.answers:
                message["role"] = "assistant"
                PolicyCall("m", {"prompt_tokens": 1, "completion_tokens": 2}).annotate(message)
        return out


async def test_the_conversation_source_keeps_the_main_conversation() -> None:
    with RolloutContext(chat_completions_url=URL) as ctx:
        source = TextSource.for_rollout(ctx)
        assert source is not None
        assert ctx.sample_source is source
        assert TextSource.for_rollout(ctx) is source
    assert source.record([], "ignored") is False
    assert source.record(["q"], "a1") is True
    assert source.record(["sub-agent"], "x") is False  # another conversation
    assert source.record(["q", "a1", "tool"], "a2") is True
    sample = await source.get_sample()
    assert sample.messages == [{"text": t} for t in ("q", "a1", "tool", "a2")]
    assert sample.trajectory_messages is not None
    assert json.dumps(sample.trajectory_messages[3]) == json.dumps(
        {"role": "assistant", "content": "a2", "model": "m",
         "usage": {"prompt_tokens": 1, "completion_tokens": 2}}
    )  # fmt: skip
    preview = await source.get_preview(2)
    assert preview is not None
    assert preview.messages == [{"text": "tool"}, {"text": "a2"}]


async def test_a_rollout_with_another_source_is_left_alone() -> None:
    with RolloutContext(chat_completions_url=URL) as ctx:
        other = TextSource()
        ctx.set_sample_source(other)

        class OtherSource(TextSource):
            pass

        assert OtherSource.for_rollout(ctx) is None
        assert ctx.sample_source is other
