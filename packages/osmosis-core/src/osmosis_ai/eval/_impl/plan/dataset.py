"""Dataset files → rollout requests (JSONL, CSV, and Parquet through the optional pyarrow extra).

Why one normalised row type: the scheduler, the manifest and the index only ever see
:class:`DatasetRow`, so adding a file format never touches them. The row rules follow the public
SDK's dataset format: *prompt mode* (``user_prompt`` with ``ground_truth`` or ``label``, optional
``system_prompt``), *messages mode* (an OpenAI-style ``messages`` list, the conversation the
rollout starts from) or *metadata mode* (a ``metadata`` column holding a JSON object, passed to
the rollout as ``metadata``). Empty strings count as absent; other scalars are stringified. Extra
columns are ignored. The user-facing description is ``docs/dataset-format.md``.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osmosis_ai._util.jsonl import json_object_lines
from osmosis_ai.errors import ConfigurationError

SUPPORTED_SUFFIXES = (".jsonl", ".csv", ".parquet")


class DatasetError(ConfigurationError):
    """The dataset file cannot be read or a row is not a valid rollout input."""


@dataclass(frozen=True, slots=True)
class DatasetRow:
    """One row, ready to become a ``POST /rollout`` body.

    ``source_index`` is the 0-based position in the file (what ``--rows`` refers to).
    """

    source_index: int
    initial_messages: list[dict[str, Any]]
    label: str | None
    metadata: dict[str, Any] | None


def file_sha256(path: Path) -> str:
    """Content hash of the dataset file; the run manifest locks it."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_dataset(path: Path) -> list[DatasetRow]:
    """Read and normalise every row of ``path``; errors name the row and the fix."""
    rows = list(iter_dataset(path))
    if not rows:
        raise DatasetError(f"dataset {path} has no rows")
    return rows


def iter_dataset(path: Path) -> Iterator[DatasetRow]:
    """Like :func:`load_dataset`, one row at a time (memory stays flat for any file size).

    ``osmosis dataset upload`` validates with it before sending a file; an empty file yields
    nothing (the caller decides whether that is an error).
    """
    if not path.is_file():
        raise DatasetError(f"dataset file not found: {path}")
    for index, record in enumerate(_records(path)):
        yield normalize_row(index, record)


def missing_label_warning(path: Path, rows: list[DatasetRow]) -> str | None:
    """A warning when no row carries a label (and none carries metadata), else ``None``.

    Graders compare against ``ground_truth``/``label``; without one every reward is silently 0,
    so the warning names the columns the file does have and the column to rename.
    """
    if not rows or any(row.label is not None or row.metadata is not None for row in rows):
        return None
    first = next(iter(_records(path)), {})
    found = ", ".join(sorted(str(key) for key in first)) or "none"
    return (
        f"no row of {path.name} has a label: a grader gets label=None and most score 0. "
        f"Columns found: {found}. Put the expected answer in a 'ground_truth' (or 'label') "
        "column; see docs/dataset-format.md."
    )


def raw_records(path: Path) -> Iterable[Mapping[str, Any]]:
    """The file's records as read, before normalisation (what ``dataset curate`` writes back)."""
    return _records(path)


def _records(path: Path) -> Iterable[Mapping[str, Any]]:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        records: Iterable[Mapping[str, Any]] = _read_jsonl(path)
    elif suffix == ".csv":
        records = _read_csv(path)
    elif suffix == ".parquet":
        records = _read_parquet(path)
    else:
        raise DatasetError(
            f"unsupported dataset format {suffix or '(no extension)'!r} for {path}; "
            f"use one of {', '.join(SUPPORTED_SUFFIXES)}"
        )
    return records


def normalize_row(index: int, record: Mapping[str, Any]) -> DatasetRow:
    """Turn one raw record into a :class:`DatasetRow` (prompt mode or metadata mode)."""
    where = f"row {index}"
    system = _text(record.get("system_prompt"))
    user = _text(record.get("user_prompt"))
    label = _text(record.get("ground_truth"))
    if label is None:
        label = _text(record.get("label"))
    metadata = _metadata(record.get("metadata"), where)
    conversation = _messages(record.get("messages"), where)
    if user is None and metadata is None and conversation is None:
        present = ", ".join(sorted(str(k) for k in record)) or "none"
        raise DatasetError(
            f"{where}: needs a 'user_prompt' (prompt mode), a 'messages' list (messages mode) "
            f"or a 'metadata' JSON object (metadata mode); columns present: {present}"
        )
    if conversation is not None:
        if user is not None or system is not None:
            raise DatasetError(
                f"{where}: has both 'messages' and 'user_prompt'/'system_prompt'; keep one "
                "(put the system prompt in 'messages' as its first entry)"
            )
        return DatasetRow(index, conversation, label=label, metadata=metadata)
    messages: list[dict[str, Any]] = []
    if system is not None:
        messages.append({"role": "system", "content": system})
    if user is not None:
        messages.append({"role": "user", "content": user})
    return DatasetRow(source_index=index, initial_messages=messages, label=label, metadata=metadata)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, float) and value != value:  # NaN from CSV/Parquet nulls
        return None
    text = value if isinstance(value, str) else str(value)
    return text if text != "" else None


def _decode_json_text(value: Any, where: str, column: str) -> Any:
    """A cell that holds JSON as text (CSV, Parquet strings) decoded; anything else as is."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{where}: {column!r} is not valid JSON ({exc.msg})") from exc


def _metadata(value: Any, where: str) -> dict[str, Any] | None:
    if value is None or value == "":
        return None
    value = _decode_json_text(value, where, "metadata")
    if not isinstance(value, Mapping) or not value:
        raise DatasetError(f"{where}: 'metadata' must be a non-empty JSON object")
    return dict(value)


def _messages(value: Any, where: str) -> list[dict[str, Any]] | None:
    """An OpenAI-style ``messages`` list (a JSON string in CSV), each with ``role`` and ``content``."""
    if value is None or value == "":
        return None
    value = _decode_json_text(value, where, "messages")
    if not isinstance(value, list) or not value:
        raise DatasetError(f"{where}: 'messages' must be a non-empty list of message objects")
    for position, message in enumerate(value):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise DatasetError(
                f"{where}: messages[{position}] must be an object with a 'role' "
                '(e.g. {"role": "user", "content": "..."})'
            )
    return [dict(message) for message in value]


def _read_jsonl(path: Path) -> Iterator[Mapping[str, Any]]:
    with path.open("r", encoding="utf-8") as fh:
        for _, _, record in json_object_lines(fh, path, DatasetError):
            yield record


def _read_csv(path: Path) -> Iterator[Mapping[str, Any]]:
    with path.open("r", encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames:
            raise DatasetError(f"{path}: CSV has no header row")
        yield from reader


def _read_parquet(path: Path) -> Iterator[Mapping[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise DatasetError(
            f"reading {path.name} needs pyarrow, which is not installed; "
            "run: pip install 'osmosis-core[parquet]' (or convert the file to JSONL)"
        ) from exc
    for batch in pq.ParquetFile(path).iter_batches(batch_size=1024):
        yield from batch.to_pylist()
