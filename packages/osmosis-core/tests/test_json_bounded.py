"""The bounded JSON reader: linear work on adversarial judge replies, a clear error (never a
RecursionError) on deep nesting, journal lines too deep are skipped."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest

from osmosis_ai._util import json_bounded
from osmosis_ai._util.json_bounded import TooDeepError, json_objects, loads, nesting_depth
from osmosis_ai.eval.judge.parse import MalformedReplyError, parse_reply


class _CountingDecoder:
    """Counts the characters the decoder reads (up to its stop or its error)."""

    def __init__(self) -> None:
        self.inner = json.JSONDecoder()
        self.read = 0

    def raw_decode(self, text: str, start: int) -> tuple[Any, int]:
        try:
            value, stop = self.inner.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            self.read += max(exc.pos - start, 1)
            raise
        self.read += stop - start
        return value, stop


ADVERSARIAL = {
    "open objects": '{"a":' * 52_000,
    "prose braces": "prose { " * 32_000 + '{"score": 0.7}',
    "unclosed arrays": '{"a": [' * 36_000 + '{"score": 0.2}',
    "balanced deep": '{"a":' * 42_000 + "1" + "}" * 42_000,
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_a_256_kb_reply_is_read_in_linear_work(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = ADVERSARIAL[name]
    assert len(text) >= 250_000
    decoder = _CountingDecoder()
    monkeypatch.setattr(json_bounded, "_DECODER", decoder)
    with contextlib.suppress(MalformedReplyError):
        parse_reply(text)
    assert decoder.read <= 6 * len(text)  # the old reader re-decoded from every '{': ~n²/2


def test_a_deeply_nested_reply_is_a_judge_error_not_a_crash() -> None:
    with pytest.raises(MalformedReplyError):
        parse_reply('{"score": ' * 100_000)
    with pytest.raises(MalformedReplyError, match="levels deep"):
        parse_reply('{"score": 1, "x": ' + "[" * 200 + "]" * 200 + "}")


def test_embedded_objects_are_still_found_around_prose() -> None:
    assert parse_reply('He said "fine {"score": 0.3, "explanation": "ok"}') == (0.3, "ok")
    assert json_objects('x {"a": {"b": 1}} y {"c": "}{"} z') == [{"a": {"b": 1}}, {"c": "}{"}]


def test_loads_refuses_deep_nesting_as_a_value_error() -> None:
    assert loads(b'{"a": [1, {"b": "[[[["}]}') == {"a": [1, {"b": "[[[["}]}
    assert nesting_depth('{"a": [1, {"b": "[[[["}]}') == 3
    with pytest.raises(TooDeepError):
        loads("[" * 100_000 + "]" * 100_000)
    with pytest.raises(
        ValueError, match="levels deep"
    ):  # every "skip a corrupt line" path catches it
        loads("[" * 200)
