"""``osmosis_ai._util.tracebacks.traceback_from``: the one trimmer behind the engine's and the
entrypoint loader's tracebacks."""

from __future__ import annotations

from osmosis_ai._util.tracebacks import traceback_from


def _outer() -> None:
    _inner()


def _inner() -> None:
    try:
        {}["key"]
    except KeyError as exc:
        raise ValueError("inner failed") from exc


def _raised() -> BaseException:
    try:
        _outer()
    except ValueError as exc:
        return exc
    raise AssertionError("_outer did not raise")


def _frames(text: str) -> list[str]:
    return [
        line.split(" in ")[-1] for line in text.splitlines() if line.lstrip().startswith("File ")
    ]


def test_starts_at_the_first_accepted_frame_and_keeps_the_cause() -> None:
    exc = _raised()
    assert _frames(traceback_from(exc, lambda _path: True))[-3:] == ["_raised", "_outer", "_inner"]
    asked: list[str] = []

    def third_frame_on(path: str) -> bool:  # every frame is in this file: accept the 3rd on
        asked.append(path)
        return len(asked) >= 3

    text = traceback_from(exc, third_frame_on)
    assert asked == [__file__] * 3
    cause, _, raised = text.partition("The above exception was the direct cause")
    assert _frames(raised) == ["_inner"]  # _raised and _outer are left out
    assert cause.rstrip().endswith("KeyError: 'key'")  # the chained cause stays
    assert raised.rstrip().endswith("ValueError: inner failed")


def test_no_accepted_frame_gives_the_whole_traceback() -> None:
    exc = _raised()
    assert traceback_from(exc, lambda _path: False) == traceback_from(exc, lambda _path: True)
