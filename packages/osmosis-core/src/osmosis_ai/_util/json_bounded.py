"""The one reader of JSON that osmosis did not write itself in this process: linear time and a
bounded nesting depth.

``json.loads`` recurses once per nesting level: a line of 100,000 ``[`` raises
``RecursionError`` (not ``ValueError``), which crashed whoever read it (a journal line stopped a
server from starting or an eval from resuming; a judge's reply crashed ``eval rubric``).
:func:`loads` measures the nesting first, in one linear pass that skips string contents, and
raises :class:`TooDeepError` (a ``ValueError``, so every "skip a corrupt line" path already
handles it) above :data:`MAX_DEPTH`.

:func:`json_objects` finds the JSON objects embedded in free text (a judge's reply with prose
around its verdict) in linear time: one pass pairs the braces, each candidate is decoded once,
and the decoding work spent on candidates that fail is capped at a few times the text's length.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

__all__ = ["MAX_DEPTH", "TooDeepError", "json_objects", "loads", "nesting_depth"]

#: Deeper than any record osmosis writes or any verdict a judge gives; far below the recursion
#: limit.
MAX_DEPTH = 128
# A JSON string (possessive: no backtracking on an unterminated one), or one bracket.
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_TOKEN = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}]', re.DOTALL)
_DECODER = json.JSONDecoder()
# Decoding spent on failed candidates is capped at this many times the text's length.
_FAILED_WORK_FACTOR = 4


class TooDeepError(ValueError):
    """The JSON nests deeper than the reader allows."""


def nesting_depth(text: str) -> int:
    """The deepest ``[``/``{`` nesting of ``text`` (strings skipped), in one linear pass."""
    brackets = _STRING.sub("", text)
    steps = [1 if c in "[{" else -1 for c in brackets if c in "[]{}"]
    return max(accumulate(steps), default=0)


def loads(data: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads(data)``, refusing more than ``max_depth`` levels of nesting."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    depth = nesting_depth(text)
    if depth > max_depth:
        raise TooDeepError(f"JSON nested {depth} levels deep (at most {max_depth})")
    return json.loads(text)


def json_objects(text: str, *, max_depth: int = MAX_DEPTH) -> list[dict[str, Any]]:
    """Every JSON object embedded in ``text``, outermost first (an object inside one that
    parsed is not listed again), in time linear in ``len(text)``.

    An object nested deeper than ``max_depth`` is not decoded; when nothing else was found,
    :class:`TooDeepError` says so.
    """
    deepest = 0
    # One pass: each '{' with the position of its matching '}' and the height of what it
    # holds (strings inside braces skipped; a quote in the prose around them is prose; a brace
    # left open in prose pairs with nothing).
    spans: list[tuple[int, int]] = []
    stack: list[list[int]] = []  # [start (-1 for '['), height]
    position = 0
    while (token := _TOKEN.search(text, position)) is not None:
        char = token.group()
        position = token.end()
        if char[0] == '"':
            if not stack:
                position = token.start() + 1  # prose: look for braces inside the quotes
            continue
        if char == "{" or char == "[":
            stack.append([token.start() if char == "{" else -1, 1])
        elif (char == "}" or char == "]") and stack:
            start, height = stack.pop()
            if stack:
                stack[-1][1] = max(stack[-1][1], height + 1)
            if char == "}" and start >= 0:
                if height > max_depth:
                    deepest = max(deepest, height)
                else:
                    spans.append((start, token.end()))
    spans.sort()
    found: list[dict[str, Any]] = []
    budget = _FAILED_WORK_FACTOR * len(text) + 1024
    covered = -1
    for start, _end in spans:
        if start < covered:
            continue  # inside an object already found
        try:
            value, stop = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            budget -= max(exc.pos - start, 1)
            if budget <= 0:
                break
            continue
        except RecursionError:  # unreachable below max_depth; never a crash
            continue
        if isinstance(value, dict):
            found.append(value)
            covered = stop
    if not found and deepest:
        raise TooDeepError(f"the text nests {deepest} levels deep (at most {max_depth})")
    return found
