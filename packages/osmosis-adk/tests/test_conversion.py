"""The adapter's translation between ADK's genai types and chat-completions messages, on real
ADK and genai objects, and the sample source's bookkeeping."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import types
from pydantic import ValidationError

from osmosis_ai.rollout.integrations.agents.adk import AdkSampleSource, OsmosisRolloutModel
from osmosis_ai.rollout.integrations.agents.adk.model import (
    _parameters,
    _response,
    _system,
)
from osmosis_ai.rollout.integrations.agents.adk.runner import _user_content, tool_error_reply
from osmosis_ai.rollout.integrations.agents.adk.sample import chat_messages
from osmosis_ai.rollout.integrations.spi import (
    PolicyCall,
    RolloutContext,
    RolloutSample,
    SampleSource,
    WireTranscript,
)


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"model": " "}, "non-empty model name"),
        ({"timeout": 0}, "positive number of seconds"),
        ({"max_retries": -1}, "max_retries must be >= 0"),
    ],
)
def test_bad_settings_say_what_is_wrong(kwargs: dict[str, Any], says: str) -> None:
    with pytest.raises((ValidationError, ValueError), match=says):
        OsmosisRolloutModel(**kwargs)


def test_a_litellm_style_prefix_is_dropped() -> None:
    assert OsmosisRolloutModel(model="openai/qwen").model == "qwen"


def test_system_instruction_in_every_shape_genai_allows() -> None:
    text = types.Part.from_text(text="be brief")
    assert _system(types.GenerateContentConfig(system_instruction="a")) == "a"
    content = types.Content(role="system", parts=[text, types.Part.from_text(text="!")])
    assert _system(types.GenerateContentConfig(system_instruction=content)) == "be brief!"
    assert _system(types.GenerateContentConfig(system_instruction=[text, "?"])) == "be brief?"
    assert _system(None) is None


def test_tools_and_sampling_parameters() -> None:
    schema = types.Schema(
        type=types.Type.OBJECT,
        properties={
            "xs": types.Schema(type=types.Type.ARRAY, items=types.Schema(type=types.Type.NUMBER))
        },
        required=["xs"],
    )
    config = types.GenerateContentConfig(
        temperature=0.5,
        stop_sequences=["END"],
        seed=7,
        tools=[
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(name="total", description="Sum.", parameters=schema),
                    types.FunctionDeclaration(
                        name="echo", parameters_json_schema={"type": "object"}
                    ),
                    types.FunctionDeclaration(name="ping"),
                ]
            )
        ],
    )
    params = _parameters(config)
    assert (params["temperature"], params["stop"], params["seed"]) == (0.5, ["END"], 7)
    total, echo, ping = (t["function"] for t in params["tools"])
    assert total["description"] == "Sum."
    assert total["parameters"]["type"] == "object"
    assert total["parameters"]["properties"]["xs"]["items"]["type"] == "number"
    assert total["parameters"]["required"] == ["xs"]
    assert echo["parameters"] == {"type": "object"}
    assert ping["parameters"] == {"type": "object", "properties": {}}
    assert _parameters(None) == {}


def test_a_response_with_reasoning_bad_arguments_and_usage() -> None:
    answer = {
        "content": None,
        "reasoning_content": "hmm",
        "tool_calls": [
            {"id": "c1", "function": {"name": "f", "arguments": "not json"}},
            {"id": "c2", "function": {"name": "g", "arguments": "[1]"}},
        ],
    }
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    response = _response(answer, usage, "m")
    assert response.content is not None
    thought, first, second = response.content.parts or []
    assert (thought.text, thought.thought) == ("hmm", True)
    assert first.function_call is not None
    assert first.function_call.args == {}
    assert second.function_call is not None
    assert second.function_call.args == {}
    assert response.usage_metadata is not None
    assert response.usage_metadata.total_token_count == 5
    empty = _response({}, None, "m")
    assert empty.content is not None
    assert empty.content.parts is not None
    assert empty.content.parts[0].text == ""


def test_history_as_chat_messages() -> None:
    call = types.FunctionCall(id="c1", name="f", args={"a": 1})
    contents = [
        types.Content(role="user", parts=[types.Part.from_text(text="hi")]),
        types.Content(
            role="model",
            parts=[
                types.Part(text="thinking", thought=True),
                types.Part.from_text(text="calling"),
                types.Part(function_call=call),
            ],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id="c1", name="f", response={"value": 1, "unit": "m"}
                    )
                ),
                types.Part.from_text(text="and?"),
            ],
        ),
    ]
    transcript = WireTranscript()
    reply = {"tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": '{"a":1}'}}]}
    transcript.record([], reply, PolicyCall(model="m"))
    messages = chat_messages(contents, "sys", transcript)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assistant = messages[2]
    assert (assistant["content"], assistant["reasoning_content"]) == ("calling", "thinking")
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"a":1}'
    assert messages[3] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": '{"value": 1, "unit": "m"}',
    }
    # A raw string whose value no longer matches (the args were edited) is not reused.
    contents[1].parts[2].function_call.args = {"a": 2}  # type: ignore[index,union-attr]
    edited = chat_messages(contents, None, transcript)
    assert edited[1]["tool_calls"][0]["function"]["arguments"] == '{"a": 2}'


async def test_the_source_keeps_the_main_conversation_and_falls_back_to_it() -> None:
    ctx = RolloutContext(chat_completions_url="http://127.0.0.1:9/v1", rollout_id="r")
    source = AdkSampleSource.for_rollout(ctx)
    assert source is not None
    assert AdkSampleSource.for_rollout(ctx) is source
    main = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]
    source.transcript.record(main, {"content": "a"}, PolicyCall(model="m", usage=None))
    source.transcript.record(
        [{"role": "user", "content": "other"}], {"content": "b"}, PolicyCall(model="m")
    )
    sample = await source.get_sample()
    # No events recorded (the workflow ran its own Runner): graders get the chat copy.
    assert sample.messages == sample.trajectory_messages
    assert [m["content"] for m in sample.messages] == ["s", "q", "a"]
    preview = await source.get_preview(1)
    assert preview is not None
    assert preview.messages == [sample.messages[-1]]
    assert (await source.get_preview(0)) is not None

    class Fixed(SampleSource):
        async def get_sample(self) -> RolloutSample:
            return RolloutSample(messages=[])

        async def get_preview(self, max_messages: int) -> RolloutSample | None:
            return None

    taken = RolloutContext(chat_completions_url="http://127.0.0.1:9/v1", rollout_id="t")
    taken.set_sample_source(Fixed())
    # The workflow chose its own sample: the model records nothing.
    assert AdkSampleSource.for_rollout(taken) is None


def test_prompts_run_agent_accepts() -> None:
    content = types.Content(role="user", parts=[types.Part.from_text(text="x")])
    assert _user_content(content) is content
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]
    assert _user_content(chat).parts is not None
    assert _user_content(chat).parts[0].text == "q"  # type: ignore[index]
    with pytest.raises(ValueError, match="without a user message"):
        _user_content([{"role": "system", "content": "s"}])


def test_tool_error_reply_outside_a_rollout_still_answers_the_model() -> None:
    class Tool:
        name = "t"

    reply = tool_error_reply(Tool(), {}, None, KeyError())  # type: ignore[arg-type]
    assert reply == {"error": "KeyError"}
