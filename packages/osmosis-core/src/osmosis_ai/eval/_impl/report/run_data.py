"""A local eval run directory read into one typed value: header, per-row results, transcripts.

Everything that shows a run (``osmosis eval show/list/compare/status`` and the HTML report)
reads it through :func:`load_run`, so a change to the on-disk layout is absorbed here once.
Files read (see ``osmosis eval run``): ``manifest.json`` (locked inputs and provenance),
``metrics.json`` (status and summary), ``events.jsonl`` (the durable journal: the latest
record of each work item), ``index.jsonl`` (trajectory file per item),
``trajectories/*.json`` (ATIF) and ``rollout_trials/<rollout_id>/diagnostics.json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from osmosis_ai.errors import EvalError
from osmosis_ai.eval._impl.report.transcript import (
    CallView,
    MessageView,
    final_answer,
    first_user_text,
    policy_calls,
    transcript_messages,
)
from osmosis_ai.eval._impl.results.metrics import RunFigures
from osmosis_ai.eval._impl.run_dir.layout import session_running
from osmosis_ai.eval._impl.run_dir.records import RowRecord, read_index
from osmosis_ai.rollout.trajectory.atif import sample_facts

PROMPT_CHARS = 500


class RunNotFoundError(EvalError, FileNotFoundError):
    """The path is not a local eval run directory."""


@dataclass(frozen=True, slots=True)
class RunHeader:
    """Provenance and summary of one run."""

    name: str
    path: Path
    run_id: str | None
    status: str
    model: str | None
    base_url_host: str | None
    rollout: str | None
    entrypoint: str | None
    dataset_file: str | None
    dataset_sha256: str | None
    selected_rows: int | None
    source_digest: str | None
    n: int
    pass_threshold: float
    created_at: str | None
    started_at: str | None
    completed_at: str | None
    duration_ms: float | None
    command: str | None
    versions: dict[str, str]
    summary: dict[str, Any]  # metrics.json "summary", as written by the run
    #: The manifest's reproducibility record (osmosis_ai.eval._impl.results.reproducibility), completed for older runs
    #: from the locked inputs and recorded versions.
    reproducibility: dict[str, Any] = field(default_factory=dict)
    #: Work items the last session left pending, and why its dispatch stopped early (a dead
    #: endpoint, ``--max-failures``, the rollout server), from ``metrics.json``.
    pending: int = 0
    halt_reason: str | None = None
    #: Why the run stopped or failed on purpose (``budget``, ``declined``, ``append_only``).
    stop_code: str | None = None
    #: A run made by ``eval regrade``: its source run, grader and counts (the manifest's
    #: ``regraded_from``); ``None`` for a run made by ``eval run``.
    regraded_from: dict[str, Any] | None = None

    @property
    def figures(self) -> RunFigures:
        """The run's figures (mean reward, pass rate, pass@k, ...), typed, from ``summary``."""
        return RunFigures.of(self.summary)

    @property
    def mean_reward(self) -> float | None:
        return self.figures.mean_reward


def row_key(row: RowRecord) -> tuple[int, int]:
    """How two runs' rows are matched: source row and sample index."""
    return (row.source_row_index, row.run_index)


def outcome(row: RowRecord, pass_threshold: float) -> str:
    """``pass`` / ``fail`` for graded items, else the status (``failed``, ``skipped``)."""
    if row.status == "success" and row.reward is not None:
        return "pass" if row.reward >= pass_threshold else "fail"
    return row.status


@dataclass(frozen=True, slots=True)
class Transcript:
    messages: list[MessageView]
    calls: list[CallView]


@dataclass(frozen=True, slots=True)
class RunData:
    header: RunHeader
    rows: list[RowRecord]
    #: keyed by (row_index, run_index); empty when loaded without transcripts
    transcripts: dict[tuple[int, int], Transcript] = field(default_factory=dict)


def read_json(path: Path | str) -> dict[str, Any]:
    """A JSON object from a file; ``{}`` when missing or unreadable (``str`` paths: the hot
    loop reads one file per row, and ``pathlib`` costs more than the read)."""
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    try:
        fh = path.open("rb")
    except OSError:
        return
    with fh:
        for line in fh:
            if not line.endswith(b"\n"):
                return  # a torn final write
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield record


def _obj(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _host(url: Any) -> str | None:
    if not isinstance(url, str) or not url:
        return None
    parts = urlsplit(url)
    return parts.hostname + (f":{parts.port}" if parts.port else "") if parts.hostname else None


def is_run_dir(path: Path) -> bool:
    return (path / "manifest.json").is_file()


def read_header(path: Path) -> RunHeader:
    """The run's provenance and summary (cheap: two small files)."""
    if not is_run_dir(path):
        raise RunNotFoundError(
            f"{path} is not an eval run directory (no manifest.json); pass a run name from "
            "`osmosis eval list` or the path of a folder under .osmosis/evals/"
        )
    manifest = read_json(path / "manifest.json")
    metrics = read_json(path / "metrics.json")
    inputs, provenance = _obj(manifest, "inputs"), _obj(manifest, "provenance")
    run, summary = _obj(metrics, "eval_run"), _obj(metrics, "summary")
    model, dataset = _obj(inputs, "model"), _obj(inputs, "dataset")
    rollout = _obj(inputs, "rollout")
    dataset_path = _str(provenance.get("dataset_path"))
    versions = provenance.get("versions") or run.get("versions") or {}
    threshold = summary.get("pass_threshold")
    duration = run.get("duration_ms")
    name = _str(manifest.get("run_name")) or path.name
    return RunHeader(
        name=name,
        path=path,
        run_id=_str(manifest.get("local_run_id")),
        status=_run_status(path, name, _str(run.get("status"))),
        model=_str(model.get("model")) or _str(run.get("model_name")),
        base_url_host=_host(model.get("base_url") or provenance.get("upstream_base_url")),
        rollout=_str(rollout.get("name")) or _str(run.get("rollout_name")),
        entrypoint=_str(rollout.get("entrypoint")),
        dataset_file=dataset_path or _str(run.get("dataset_name")),
        dataset_sha256=_str(dataset.get("sha256")),
        selected_rows=dataset.get("selected_rows")
        if isinstance(dataset.get("selected_rows"), int)
        else None,
        source_digest=_str(rollout.get("source_digest")),
        n=int(inputs.get("n") or summary.get("n_runs") or 1),
        pass_threshold=float(threshold) if isinstance(threshold, int | float) else 1.0,
        created_at=_str(manifest.get("created_at")),
        started_at=_str(run.get("started_at")),
        completed_at=_str(run.get("completed_at")),
        duration_ms=float(duration) if isinstance(duration, int | float) else None,
        command=_str(provenance.get("command_line") or run.get("command_line")),
        versions={str(k): str(v) for k, v in versions.items()}
        if isinstance(versions, dict)
        else {},
        summary=summary,
        reproducibility={
            "versions": versions if isinstance(versions, dict) else {},
            "model": _str(model.get("model")),
            "dataset_sha256": _str(dataset.get("sha256")),
            "rollout_source_digest": _str(rollout.get("source_digest")),
            **_obj(manifest, "reproducibility"),
        },
        pending=run["pending"] if isinstance(run.get("pending"), int) else 0,
        halt_reason=_str(run.get("halt_reason")),
        stop_code=_str(run.get("stop_code")),
        regraded_from=_obj(manifest, "regraded_from") or None,
    )


def _records(path: Path) -> list[RowRecord]:
    """``index.jsonl`` (written at the end of each session); the journal while none exists."""
    if (path / "index.jsonl").is_file():
        return read_index(path)
    latest: dict[tuple[int, int], dict[str, Any]] = {}
    for record in _iter_jsonl(path / "events.jsonl"):
        try:
            latest[(int(record["row_index"]), int(record["run_index"]))] = record
        except (KeyError, TypeError, ValueError):
            continue
    return [
        RowRecord.from_json({"source_row_index": key[0], **latest[key]}) for key in sorted(latest)
    ]


def _with_facts(
    row: RowRecord,
    document: Mapping[str, Any],
    diagnostics: Mapping[str, Any],
    messages: list[MessageView],
) -> RowRecord:
    """Fill the record's optional facts the run did not store from its trajectory and its
    diagnostics (a value already in the record wins)."""
    facts = sample_facts(document)
    prompt = row.prompt or first_user_text(messages)
    failed_phase = _str(diagnostics.get("failed_phase"))
    return replace(
        row,
        prompt=prompt[:PROMPT_CHARS] if prompt else None,
        label=row.label if row.label is not None else facts.label,
        answer=row.answer or final_answer(messages),
        traceback=row.traceback or _str(diagnostics.get("traceback")),
        error_message=row.error_message or facts.err_message,
        metrics=row.metrics or facts.metrics,
        explanation=row.explanation or facts.explanation,
        failed_phase=row.failed_phase or failed_phase,
        tool_errors=row.tool_errors or facts.tool_errors,
    )


def _documents(root: str, row: RowRecord) -> tuple[dict[str, Any], dict[str, Any]]:
    """The row's trajectory document and, for a failure, its diagnostics (``{}`` if none)."""
    document = read_json(f"{root}/{row.trajectory_filename}") if row.trajectory_filename else {}
    return document, _diagnostics(root, row)


def _diagnostics(root: str, row: RowRecord) -> dict[str, Any]:
    if row.status == "failed" and row.rollout_id:
        return read_json(f"{root}/rollout_trials/{row.rollout_id}/diagnostics.json")
    return {}


def row_with_facts(
    run_dir: Path, row: RowRecord, document: dict[str, Any] | None = None
) -> RowRecord:
    """``row`` with the optional facts it lacks (prompt, label, answer, traceback, grader
    metrics) read from its trajectory and diagnostics; the engine stores them in index.jsonl.
    ``document``: the trajectory as just written (the engine's finalisation), not read back."""
    if document is None:
        document, diagnostics = _documents(str(run_dir), row)
    else:
        diagnostics = _diagnostics(str(run_dir), row)
    return _with_facts(row, document, diagnostics, transcript_messages(document))


def _stored_facts(row: RowRecord) -> bool:
    """The record already carries what the trajectory would add (a run written by this
    version): readers that do not need transcripts can skip reading the trajectory."""
    return row.prompt is not None and (row.status != "failed" or row.traceback is not None)


def load_run(path: Path, *, transcripts: bool = True) -> RunData:
    """Read a run directory. ``transcripts=False`` skips the message lists (not the facts)."""
    header = read_header(path)
    rows: list[RowRecord] = []
    loaded: dict[tuple[int, int], Transcript] = {}
    root = str(path)
    for row in _records(path):
        if row.trajectory_filename is None:
            candidate = f"trajectories/row_{row.row_index}_run_{row.run_index}.json"
            if (path / candidate).is_file():
                row = replace(row, trajectory_filename=candidate)
        if not transcripts and _stored_facts(row):
            rows.append(row)
            continue
        document, diagnostics = _documents(root, row)
        messages = transcript_messages(document)
        rows.append(_with_facts(row, document, diagnostics, messages))
        if transcripts:
            loaded[(row.row_index, row.run_index)] = Transcript(
                messages=messages, calls=policy_calls(document)
            )
    return RunData(header=header, rows=rows, transcripts=loaded)


def _run_status(path: Path, name: str, finished: str | None) -> str:
    """``running`` while a session holds the run; else the last session's status, or
    ``interrupted`` when no session finished (killed, or stopped before writing metrics)."""
    # An archive (``<name>.archive-<stamp>``) shares the run's name, never its lock.
    if path.name == name and session_running(path, name):
        return "running"
    return finished or "interrupted"


def find_runs(output_root: Path) -> list[RunHeader]:
    """Every run under ``output_root`` (archives included), newest first."""
    if not output_root.is_dir():
        return []
    headers = [read_header(p) for p in output_root.iterdir() if p.is_dir() and is_run_dir(p)]
    return sorted(headers, key=lambda h: h.started_at or h.created_at or "", reverse=True)
