"""The input of ``osmosis eval rubric``: a JSONL file of conversations, and the rubric text.

Each line is a JSON object with either ``messages`` (chat messages; the last assistant turn is
graded) or ``solution_str`` (the text to grade), and optionally ``ground_truth``,
``original_input``, ``metadata`` (an object) and ``id`` / ``conversation_id`` (the record's
label). This is 0.3's format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osmosis_ai._util.jsonl import json_object_lines
from osmosis_ai.errors import ConfigurationError


@dataclass(frozen=True, slots=True)
class RubricRecord:
    """One conversation to grade."""

    solution_str: str
    ground_truth: str | None = None
    original_input: str | None = None
    metadata: dict[str, Any] | None = None
    record_id: str | None = None

    def label(self, index: int) -> str:
        return self.record_id or f"record[{index}]"


def last_assistant_text(messages: Sequence[Any]) -> str:
    """The text of the most recent assistant message with any (string or text-part) content."""
    for message in reversed(messages):
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str) and content.strip():
            return content.strip()
        if isinstance(content, list):
            texts = [
                part["text"].strip()
                for part in content
                if isinstance(part, Mapping)
                and part.get("type") == "text"
                and isinstance(part.get("text"), str)
                and part["text"].strip()
            ]
            if texts:
                return "\n".join(texts)
    return ""


def _record(payload: dict[str, Any], where: str) -> RubricRecord:
    messages = payload.get("messages")
    solution = payload.get("solution_str")
    if isinstance(messages, list) and messages:
        text = last_assistant_text(messages)
        if not text:
            raise ConfigurationError(
                f"{where}: 'messages' has no assistant message with text to grade"
            )
    elif isinstance(solution, str) and solution.strip():
        text = solution.strip()
    else:
        raise ConfigurationError(
            f"{where}: each line needs 'messages' (a list of chat messages) or 'solution_str' "
            "(the text to grade)"
        )

    def text_field(name: str) -> str | None:
        value = payload.get(name)
        return value if isinstance(value, str) else None

    metadata = payload.get("metadata")
    record_id = payload.get("id") or payload.get("conversation_id")
    return RubricRecord(
        solution_str=text,
        ground_truth=text_field("ground_truth"),
        original_input=text_field("original_input"),
        metadata=metadata if isinstance(metadata, dict) else None,
        record_id=str(record_id).strip() if record_id else None,
    )


def load_rubric_records(path: Path) -> list[RubricRecord]:
    """Every record of the JSONL file at ``path``; a bad line is an error naming it."""
    if not path.exists():
        raise ConfigurationError(f"data file '{path}' does not exist")
    if path.is_dir():
        raise ConfigurationError(f"expected a JSONL file but '{path}' is a directory")
    records: list[RubricRecord] = []
    with path.open(encoding="utf-8") as handle:
        for _, where, payload in json_object_lines(handle, path, ConfigurationError):
            records.append(_record(payload, where))
    if not records:
        raise ConfigurationError(f"no records in '{path}' (one JSON object per line)")
    return records


def read_rubric_text(value: str) -> str:
    """``value`` itself, or the contents of the file named after ``@``."""
    if value.startswith("@"):
        path = Path(value[1:]).expanduser()
        if not path.is_file():
            raise ConfigurationError(f"rubric file '{path}' does not exist (or is not a file)")
        text = path.read_text(encoding="utf-8").strip()
        if not text:
            raise ConfigurationError(f"rubric file '{path}' is empty")
        return text
    if not value.strip():
        raise ConfigurationError("the rubric is empty: pass its text, or @file to read it")
    return value.strip()
