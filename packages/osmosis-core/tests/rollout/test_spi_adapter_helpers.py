"""Shared helpers of the adapters: any sample source registers itself on the active rollout
(``SampleSource.for_rollout()``), a tool error's text for the model comes from the call that
records it, a framework's tool call becomes a chat-completions entry with the policy's own
arguments string (``WireTranscript.tool_call``, ADK), and a streamed answer is merged for the
sample only if it is still the conversation's last (``record_later``, LangGraph)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from osmosis_ai.rollout.context import ConversationSampleSource, RolloutContext, SampleSource
from osmosis_ai.rollout.integrations.spi import WireTranscript, record_tool_error
from osmosis_ai.rollout.policy import PolicyCall
from osmosis_ai.rollout.types.sample import RolloutSample

URL = "http://127.0.0.1:1/v1/rollouts/r1"


class EventSource(SampleSource):
    """A plain sample source (not a conversation one), as ADK's is."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    async def get_sample(self) -> RolloutSample:
        return RolloutSample(messages=self.events)


async def test_any_source_registers_on_the_active_rollout_without_being_handed_it() -> None:
    assert EventSource.for_rollout() is None  # outside a rollout: nothing to register on
    with RolloutContext(chat_completions_url=URL) as ctx:
        source = EventSource.for_rollout()
        assert source is not None
        assert ctx.sample_source is source
        assert EventSource.for_rollout() is source
        assert EventSource.for_rollout(ctx) is source
        source.events.append({"role": "user", "content": "q"})
    sample = await source.get_sample()
    assert sample.messages == [{"role": "user", "content": "q"}]


def test_another_source_on_the_rollout_is_left_alone() -> None:
    class Other(EventSource):
        pass

    with RolloutContext(chat_completions_url=URL) as ctx:
        first = EventSource()
        ctx.set_sample_source(first)
        assert Other.for_rollout() is None
        assert ctx.sample_source is first


def test_recording_a_tool_error_gives_the_text_to_show_the_model() -> None:
    with RolloutContext(chat_completions_url=URL) as ctx:
        said = record_tool_error("multiply", ValueError("b must be a number"), call_id="c1")
        bare = record_tool_error("multiply", KeyError())
        given = record_tool_error("divide", "division by zero")
    assert (said, bare, given) == ("ValueError: b must be a number", "KeyError", "division by zero")
    assert ctx.tool_errors == [
        {"tool": "multiply", "message": "ValueError: b must be a number", "call_id": "c1"},
        {"tool": "multiply", "message": "KeyError"},
        {"tool": "divide", "message": "division by zero"},
    ]
    # Outside a rollout nothing is recorded, and the text is the same.
    assert record_tool_error("multiply", RuntimeError("x")) == "RuntimeError: x"


def test_a_framework_tool_call_goes_back_with_the_policys_own_arguments() -> None:
    transcript = WireTranscript()
    answer = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "multiply", "arguments": '{"a":2,"b":3}'},
            }
        ],
    }
    transcript.record([{"role": "user", "content": "q"}], answer, PolicyCall("m", None))
    unchanged = transcript.tool_call("c1", "multiply", {"a": 2, "b": 3})
    assert unchanged == {
        "id": "c1",
        "type": "function",
        "function": {"name": "multiply", "arguments": '{"a":2,"b":3}'},
    }
    edited = transcript.tool_call("c1", "multiply", {"a": 2, "b": 4})
    assert edited["function"]["arguments"] == '{"a": 2, "b": 4}'
    assert transcript.tool_call(None, None, None) == {
        "id": "",
        "type": "function",
        "function": {"name": "", "arguments": "{}"},
    }


class Texts(ConversationSampleSource[str]):
    def native(self, messages: Sequence[str]) -> list[dict[str, Any]]:
        return [{"text": m} for m in messages]

    def wire(self) -> list[dict[str, Any]] | None:
        return None


async def test_an_answer_recorded_later_is_built_once_and_only_while_it_is_the_last() -> None:
    built: list[str] = []

    def later(text: str) -> Callable[[], str]:
        def build() -> str:
            built.append(text)
            return text

        return build

    source = Texts()
    assert source.record_later([], later("never")) is False
    assert source.record_later(["q"], later("a1")) is True
    assert source.record_later(["sub-agent"], later("x")) is False  # another conversation
    # The next call continues the conversation with the framework's own copy of a1.
    assert source.record_later(["q", "a1", "tool"], later("a2")) is True
    assert built == []  # nothing merged while the rollout runs
    sample = await source.get_sample()
    assert sample.messages == [{"text": t} for t in ("q", "a1", "tool", "a2")]
    assert source.answers == ["a2"]
    assert built == ["a2"]  # a1 was superseded and never built; a2 built once
    # A concrete answer after a pending one: the pending one is dropped, the history goes on.
    assert source.record(["q", "a1", "tool", "a2", "more"], "a3") is True
    assert source.history[-1] == "a3"
    assert source.answers == ["a3"]
    assert built == ["a2"]
