"""``complete_chat`` against the scripted policy on 127.0.0.1 (streamed and not) and
``WireTranscript``'s bookkeeping: the shared pieces an adapter that renders its own chat
messages builds on (osmosis-adk does)."""

from __future__ import annotations

import pytest

pytest.importorskip("openai")

from osmosis_ai.errors import PolicyHTTPError
from osmosis_ai.rollout.integrations.spi import (
    ChatAnswer,
    PolicyCall,
    WireTranscript,
    aclose_policy_clients,
    complete_chat,
    policy_client,
)
from osmosis_ai.testing import (
    ScriptedPolicyServer,
    error_reply,
    text_reply,
    tool_call_reply,
)

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize("stream", [False, True])
async def test_complete_chat_streamed_or_not_ends_with_the_answer(stream: bool) -> None:
    async with ScriptedPolicyServer([text_reply("hello there")]) as server:
        url = server.chat_completions_url("r-chat")
        items = [
            i
            async for i in complete_chat(policy_client(url, None), REQUEST, url=url, stream=stream)
        ]
        (request,) = server.requests_for("r-chat")
    await aclose_policy_clients()
    *deltas, answer = items
    assert isinstance(answer, ChatAnswer)
    assert answer.message["content"] == "hello there"
    assert answer.message["role"] == "assistant"
    assert answer.finish_reason == "stop"
    assert answer.call.model
    assert answer.call.usage is not None
    assert answer.call.usage["total_tokens"] > 0
    assert "".join(d for d in deltas if isinstance(d, str)) == ("hello there" if stream else "")
    assert request.body.get("stream", False) is stream


async def test_complete_chat_tool_calls_and_errors() -> None:
    script = [tool_call_reply("f", '{"a":1}', call_id="c1"), error_reply(500, "boom")]
    async with ScriptedPolicyServer(script) as server:
        url = server.chat_completions_url("r-tools")
        client = policy_client(url, None)
        *_, answer = [i async for i in complete_chat(client, REQUEST, url=url, stream=True)]
        assert isinstance(answer, ChatAnswer)
        (call,) = answer.message["tool_calls"]
        assert (call["id"], call["function"]["arguments"]) == ("c1", '{"a":1}')
        with pytest.raises(PolicyHTTPError, match="boom"):
            async for _ in complete_chat(client, REQUEST, url=url):
                pass
    await aclose_policy_clients()


def test_transcript_sends_the_policys_own_argument_strings_back() -> None:
    transcript = WireTranscript()
    answer = {"tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": '{"a":1}'}}]}
    transcript.record([{"role": "user", "content": "q"}], answer, PolicyCall(model="m"))
    assert transcript.arguments("c1", {"a": 1}) == '{"a":1}'
    assert transcript.arguments("c1", {"a": 2}) == '{"a": 2}'  # changed: rendered anew
    assert transcript.arguments("other", {"a": 1}) == '{"a": 1}'
    assert WireTranscript.parse_arguments('{"a":1}') == {"a": 1}
    assert WireTranscript.parse_arguments("[1]") == {}
    assert WireTranscript.parse_arguments("not json") == {}
    assert WireTranscript.parse_arguments(None) == {}


def test_transcript_keeps_the_main_thread_with_model_and_usage_per_call() -> None:
    transcript = WireTranscript()
    usage = {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    first = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]
    call = {"id": "c1", "function": {"name": "f", "arguments": "{}"}}
    assert transcript.record(first, {"tool_calls": [call]}, PolicyCall(model="m1", usage=usage))
    # A sub-agent's conversation (another first message) is not the main thread.
    assert not transcript.record(
        [{"role": "user", "content": "x"}], {"content": "y"}, PolicyCall("m")
    )
    sent_back = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    second = [*first, sent_back, {"role": "tool", "tool_call_id": "c1", "content": "1"}]
    answer = {"content": "done", "reasoning_content": "because"}
    assert transcript.record(second, answer, PolicyCall(model="m2"))
    wire = transcript.messages
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "assistant"]
    assert (wire[2]["model"], wire[2]["usage"]) == ("m1", usage)
    assert wire[4] == {
        "role": "assistant", "content": "done", "reasoning_content": "because", "model": "m2"
    }  # fmt: skip
