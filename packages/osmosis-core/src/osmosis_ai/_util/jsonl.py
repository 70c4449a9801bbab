"""``json_object_lines``: the objects of a user-written JSONL file, a bad line an error naming it.

The one reader of "one JSON object per line" input files (evaluation datasets, rubric data,
reply scripts): blank lines are skipped, and a line that is not JSON, or not an object, raises
the caller's error class with ``<source>:<line>`` in front of what is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any


def json_object_lines(
    lines: Iterable[str],
    source: object,
    error: type[Exception],
    *,
    expected: str = "a JSON object",
) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """``(line number, "<source>:<number>", object)`` for each non-blank line of ``lines``.

    ``expected`` describes the object in the message for a line that is not one.
    """
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{where}: not valid JSON ({exc.msg})") from exc
        if not isinstance(value, dict):
            raise error(f"{where}: each line must be {expected}")
        yield number, where, value
