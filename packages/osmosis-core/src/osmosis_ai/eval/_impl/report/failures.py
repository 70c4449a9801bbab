"""Failures grouped by what went wrong: "17 x KeyError: 'contnet' in grader.py:12".

A group is (error type, message, innermost frame of the user's code): the innermost frame of
the traceback when there is one, so the same bug on many rows is one line to read. Messages are
compared with what varies per row taken out (URLs, ids, numbers: a per-rollout proxy URL in an
HTTP error must not make eight identical failures eight groups); each group keeps its first
row's message as the example shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePath

from osmosis_ai.eval._impl.run_dir.records import RowRecord

_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)', re.MULTILINE)
_MESSAGE_CHARS = 200
#: What varies per row inside one failure's message, most specific first. An HTTP status
#: (``HTTP 500``) is kept: a 500 and a 404 are different failures.
_VARYING = re.compile(
    r"(?P<keep>\bHTTP \d{3}\b)"
    r"|(?P<url>[a-z][a-z0-9+.-]*://[^\s'\"<>()\[\]]*[^\s'\"<>()\[\].,:;])"
    r"|(?P<id>\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
    r"|\b(?=[\w-]*\d)(?=[\w-]*[a-z_-])[\w-]{12,}\b|\b[0-9a-f]{8,}\b)"
    r"|(?P<number>(?<![\w.])\d+(?:\.\d+)?)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Location:
    file: str
    line: int

    def __str__(self) -> str:
        return f"{PurePath(self.file).name}:{self.line}"


def innermost_frame(traceback: str | None) -> Location | None:
    """File and line of the last frame of a formatted Python traceback."""
    if not traceback:
        return None
    frames = list(_FRAME.finditer(traceback))
    if not frames:
        return None
    last = frames[-1]
    return Location(last["file"], int(last["line"]))


def exception_line(traceback: str | None) -> str | None:
    """The final ``Type: message`` line of a formatted traceback."""
    if not traceback:
        return None
    lines = [line for line in traceback.strip().splitlines() if line and not line[0].isspace()]
    return lines[-1] if lines else None


@dataclass(slots=True)
class FailureGroup:
    error_type: str
    message: str
    location: Location | None
    rows: list[RowRecord] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.rows)

    @property
    def first(self) -> RowRecord:
        return self.rows[0]

    def describe(self) -> str:
        where = f" in {self.location}" if self.location else ""
        return f"{self.count} \N{MULTIPLICATION SIGN} {self.message}{where} ({self.error_type})"

    def as_dict(self) -> dict[str, object]:
        return {
            "count": self.count,
            "error_type": self.error_type,
            "message": self.message,
            "file": self.location.file if self.location else None,
            "line": self.location.line if self.location else None,
            "rows": [[r.row_index, r.run_index] for r in self.rows],
        }


def _message(row: RowRecord) -> str:
    text = exception_line(row.traceback) or (row.error_message or "").strip() or "(no message)"
    first = text.splitlines()[0] if text else text
    return first[:_MESSAGE_CHARS]


def normalized_message(message: str) -> str:
    """``message`` with URLs, ids and numbers replaced by ``<url>``, ``<id>``, ``<n>``: the key
    under which failures group."""

    def placeholder(match: re.Match[str]) -> str:
        if match["keep"]:
            return match["keep"]
        return "<url>" if match["url"] else "<id>" if match["id"] else "<n>"

    return _VARYING.sub(placeholder, message)


def group_failures(rows: Iterable[RowRecord]) -> list[FailureGroup]:
    """Failed rows grouped by (type, normalized message, location), largest group first."""
    groups: dict[tuple[str, str, Location | None], FailureGroup] = {}
    for row in rows:
        if row.status != "failed":
            continue
        error_type = row.error_type or "rollout_failed"
        location = innermost_frame(row.traceback)
        message = _message(row)
        group = groups.setdefault(
            (error_type, normalized_message(message), location),
            FailureGroup(error_type, message, location),
        )
        group.rows.append(row)
    return sorted(groups.values(), key=lambda g: (-g.count, g.error_type, g.message))
