"""Which dataset rows a run evaluates: ``--rows SPEC`` or ``--limit N``.

Why it matters for resume: the selection is part of the run's locked inputs, so the same
flags must always give the same source rows in the same order. ``--rows`` takes
``"3,7,10-20"`` (0-based source indices, inclusive ranges, file order kept as written,
duplicates refused); ``--limit N`` takes the first N rows; ``N <= 0`` or neither means all.
"""

from __future__ import annotations

import re

from osmosis_ai.errors import ConfigurationError

_ROWS_RE = re.compile(r"^\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$")


class SelectionError(ConfigurationError):
    """The row selection is malformed or points outside the dataset."""


def parse_rows_spec(spec: str, total_rows: int) -> list[int]:
    """Expand ``"3,7,10-20"`` into source indices, validated against ``total_rows``."""
    compact = spec.replace(" ", "")
    if not _ROWS_RE.match(compact):
        raise SelectionError(
            f"--rows {spec!r} is not a row list; use 0-based indices and inclusive ranges "
            "such as '0-9' or '3,7,10-20'"
        )
    selected: list[int] = []
    seen: set[int] = set()
    for part in compact.split(","):
        if "-" in part:
            start_text, end_text = part.split("-", 1)
            start, end = int(start_text), int(end_text)
            if end < start:
                raise SelectionError(f"--rows range {part!r} is inverted; write {end}-{start}")
        else:
            start = end = int(part)
        if end >= total_rows:
            raise SelectionError(
                f"--rows {part!r} is out of range: the dataset has {total_rows} rows "
                f"(indices 0-{total_rows - 1})"
            )
        for index in range(start, end + 1):
            if index in seen:
                raise SelectionError(f"--rows selects row {index} more than once")
            seen.add(index)
            selected.append(index)
    return selected


def select_rows(total_rows: int, *, rows: str | None = None, limit: int | None = None) -> list[int]:
    """The source indices to evaluate; ``--rows`` and ``--limit`` are mutually exclusive."""
    if rows is not None and limit is not None:
        raise SelectionError("pass either --rows or --limit, not both")
    if rows is not None:
        return parse_rows_spec(rows, total_rows)
    if limit is None or limit <= 0:
        return list(range(total_rows))
    return list(range(min(limit, total_rows)))
