"""Built-in responders."""

from __future__ import annotations

import json

from osmosis_ai.testing import Reply, echo, instant, multiply_solver
from osmosis_ai.testing.responders import message_text, multiply_operands


def test_multiply_solver_calls_the_tool_then_answers() -> None:
    first = multiply_solver({"messages": [{"role": "user", "content": "What is 12 * -3?"}]})
    assert first.content is None
    [call] = first.tool_calls
    assert call.name == "multiply"
    assert json.loads(call.arguments_json()) == {"a": 12, "b": -3}

    second = multiply_solver(
        {
            "messages": [
                {"role": "system", "content": "be brief 99 100"},
                {"role": "user", "content": [{"type": "text", "text": "Multiply 12 and -3."}]},
                {"role": "assistant", "tool_calls": []},
                {"role": "tool", "content": "999"},
            ]
        }
    )
    assert second == Reply(content="#### -36")


def test_multiply_solver_without_numbers_says_so() -> None:
    reply = multiply_solver({"messages": [{"role": "user", "content": "hello"}]})
    assert reply.content == "I need two integers to multiply."


def test_message_text_and_operands() -> None:
    assert (
        message_text({"content": [{"type": "text", "text": "a"}, "b", {"type": "image"}]}) == "a\nb"
    )
    assert message_text({"content": None}) == ""
    assert multiply_operands("3 and 4 and 5") == (3, 4)
    assert multiply_operands("only 3") is None


def test_echo_and_instant() -> None:
    assert echo({"messages": [{"role": "user", "content": "hi"}]}).content == "hi"
    assert instant({"messages": []}).content == "ok"
