"""The per-row record: one finished work item (one dataset row x one sample index).

:class:`RowRecord` is the single source of truth about a row's outcome. The console summary,
``index.jsonl``, :attr:`EvalRun.rows <osmosis_ai.eval.EvalRun.rows>` and whatever later reads a
run (``eval show``/``compare``, the HTML report) all read this type; nothing re-derives a row's
status, reward or error elsewhere.

JSON form (one object per line of ``index.jsonl``; :meth:`RowRecord.to_json` /
:meth:`RowRecord.from_json`)::

    {"row_index": 0,            position in the run's row selection
     "run_index": 1,            sample index, 0..n-1
     "source_row_index": 7,     0-based row of the dataset file (what --rows refers to)
     "rollout_id": "9f3c...",   the rollout's id on the rollout server
     "status": "success",       success | failed | skipped
     "reward": 1.0,             the grader's reward (success only; never 0 for a failure)
     "error_type": null,        failure category: timeout, http_error, agent_error, ...
     "error_message": null,     the failure's message, secrets redacted
     "tokens": 412,             total tokens of the row's policy calls
     "duration_ms": 812.4,      admission to result
     "policy_calls": 2,         model calls the rollout made through the eval's policy proxy
     "trajectory_filename": "trajectories/row_0_run_1.json",   relative to the run directory
     "resumed": false,          finished in an earlier session of the run
     "attempt": "20261201T144501Z"}   session that produced it

Keys are only ever added. Reserved for richer records (written only when known, absent
otherwise): ``prompt`` (first user message, truncated), ``label``, ``answer`` (the final
assistant message), ``traceback``, ``cost`` (an object: currency amounts per kind) and
``metrics`` (the grader's metrics) and ``judge`` (the grader's LLM-judge usage, apart from the
policy's ``tokens``: ``{"calls", "failed_calls", "cached_calls", "prompt_tokens",
"completion_tokens", "latency_s", "cost_usd"?}``; a row whose judge failed has
``error_type: "judge_error"`` and no reward) and ``training_safety`` (the rollout's append-only
verdict, :meth:`osmosis_ai.eval.AppendOnlyVerdict.to_json`: ``{"append_only", "calls",
"threads", "token_ids", "divergence"?, "token_mismatch"?, "truncated_calls"?}``; present when
the rollout made policy calls), ``explanation`` (the grader's explanation of its score:
``ctx.sample.extra_fields["explanation"]``, e.g. an LLM judge's) and ``failed_phase`` (where a
failed rollout stopped: ``workflow``, ``grader``, ...) and ``tool_errors`` (the tool calls that
raised during the rollout, ``[{"tool", "message", "call_id"?}]``, as the framework integrations
record them: the model saw an error result, so the row's answer may be wrong for that reason) and
``tripwires`` (the reward-hacking tripwires that fired on the row, ``[{"name", "detail",
"silenced"?}]``: :mod:`osmosis_ai.eval._impl.results.tripwires`). ``metrics`` holds the numeric and other
values the grader set in ``ctx.sample.metrics`` (the ``judge_*`` usage metrics are in
``judge``). Unknown keys read from a newer file land in ``extra``.
"""

from __future__ import annotations

import json
import os
import weakref
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, overload

RowStatus = Literal["success", "failed", "skipped"]

#: Optional fields: omitted from the JSON form while ``None``.
_OPTIONAL = frozenset(
    (
        "prompt",
        "label",
        "answer",
        "traceback",
        "cost",
        "metrics",
        "attempt",
        "judge",
        "training_safety",
        "explanation",
        "failed_phase",
        "tool_errors",
        "tripwires",
    )
)


@dataclass(frozen=True, slots=True)
class RowRecord:
    """The outcome of one work item; see the module docstring for its JSON form."""

    row_index: int
    run_index: int
    source_row_index: int
    status: RowStatus
    rollout_id: str | None = None
    reward: float | None = None
    error_type: str | None = None
    error_message: str | None = None
    tokens: int = 0
    duration_ms: float | None = None
    policy_calls: int = 0
    trajectory_filename: str | None = None
    resumed: bool = False
    attempt: str | None = None
    prompt: str | None = None
    label: str | None = None
    answer: str | None = None
    traceback: str | None = None
    cost: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None
    judge: dict[str, Any] | None = None
    training_safety: dict[str, Any] | None = None
    explanation: str | None = None
    failed_phase: str | None = None
    tool_errors: list[dict[str, Any]] | None = None
    tripwires: list[dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def sample_index(self) -> int:
        """Alias of :attr:`run_index` (which of the ``n`` samples of the row this is)."""
        return self.run_index

    @property
    def succeeded(self) -> bool:
        return self.status == "success"

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    @property
    def tool_error_count(self) -> int:
        """How many of the row's tool calls raised."""
        return len(self.tool_errors) if self.tool_errors else 0

    @property
    def cost_usd(self) -> float | None:
        """The row's total cost in USD (policy and judge); ``None`` when not priced."""
        total = self.cost.get("total_usd") if self.cost else None
        return float(total) if isinstance(total, int | float) else None

    def trajectory_path(self, run_dir: str | Path) -> Path | None:
        """Absolute path of the row's ATIF trajectory, when one was written."""
        if self.trajectory_filename is None:
            return None
        return Path(run_dir) / self.trajectory_filename

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for name in _FIELDS:
            value = getattr(self, name)
            if value is None and name in _OPTIONAL:
                continue
            data[name] = value
        if self.extra:
            data.update({k: v for k, v in self.extra.items() if k not in data})
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RowRecord:
        known = set(_FIELDS)
        values = {k: v for k, v in data.items() if k in known}
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(**values, extra=extra)


#: The JSON keys, in order (computed once: ``dataclasses.fields`` per row costs ~10 us).
_FIELDS = tuple(f.name for f in fields(RowRecord) if f.name != "extra")


def read_index(path: str | Path) -> list[RowRecord]:
    """The records of an ``index.jsonl`` (a run directory's, or the file itself)."""
    file = Path(path)
    if file.is_dir():
        file = file / "index.jsonl"
    with file.open(encoding="utf-8") as fh:
        return [RowRecord.from_json(json.loads(line)) for line in fh if line.strip()]


class IndexRows(Sequence[RowRecord]):
    """The rows of an ``index.jsonl``, read from the file when asked for (``EvalRun.rows``): a
    run of any length hands back its rows without holding them. Held: the open file (the
    version this object was made for: a later session that replaces the file, or an archive
    that moves the folder, leaves it readable) and the byte offset of each line (8 bytes per
    row). ``resumed=True`` reads every row as finished in an earlier session (a rerun that
    dispatched nothing and kept the stored file)."""

    def __init__(
        self, path: str | Path, offsets: array[int] | None = None, *, resumed: bool | None = None
    ) -> None:
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        self._close = weakref.finalize(self, os.close, self._fd)
        self._size = os.fstat(self._fd).st_size
        self._resumed = resumed
        if offsets is None:
            offsets = array("q")
            with open(self._fd, "rb", closefd=False) as fh:
                at = 0
                for line in fh:
                    if line.strip():
                        offsets.append(at)
                    at += len(line)
        self._offsets = offsets

    def __len__(self) -> int:
        return len(self._offsets)

    @overload
    def __getitem__(self, index: int) -> RowRecord: ...
    @overload
    def __getitem__(self, index: slice) -> list[RowRecord]: ...
    def __getitem__(self, index: int | slice) -> RowRecord | list[RowRecord]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        start = self._offsets[index]  # IndexError past the end, negative indexes count back
        position = index if index >= 0 else len(self) + index
        end = self._offsets[position + 1] if position + 1 < len(self) else self._size
        row = RowRecord.from_json(json.loads(os.pread(self._fd, end - start, start)))
        return row if self._resumed is None else replace(row, resumed=self._resumed)

    def __iter__(self) -> Iterator[RowRecord]:
        for i in range(len(self)):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"IndexRows({str(self.path)!r}, {len(self)} rows)"


def write_index(path: Path, rows: list[RowRecord]) -> None:
    """Atomically replace ``index.jsonl`` (temp file, fsync, rename)."""
    from osmosis_ai.atomic_file import write_atomic

    write_atomic(path, index_text(rows), durable=True)


def index_text(rows: list[RowRecord]) -> str:
    """The text of ``index.jsonl`` for ``rows`` (one JSON object per line)."""
    return "".join(json.dumps(row.to_json(), allow_nan=False) + "\n" for row in rows)
