"""The end of every session: journal → per-row records, trajectories, ``index.jsonl``, metrics.

Why it runs on every path (done, partial, halted, interrupted): the results on disk must always
describe the journal. Rows finished in this session get their trajectory assembled (the server
has stopped, so every trajectory file is on disk); rows from earlier sessions keep theirs.
"""

from __future__ import annotations

import heapq
import json
import shlex
import sys
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from osmosis_ai.atomic_file import AtomicWriter
from osmosis_ai.eval._impl.cost.budget import Budget
from osmosis_ai.eval._impl.plan.plan import EvalPlan
from osmosis_ai.eval._impl.results import tripwires
from osmosis_ai.eval._impl.results.metrics import ItemResult, MetricTotals
from osmosis_ai.eval._impl.results.reproducibility import (
    HARBOR_SAMPLE_KEY,
    harbor_tasks,
    merged,
    observed,
    run_record,
    run_versions,
    with_harbor_tasks,
)
from osmosis_ai.eval._impl.results.run import EvalRun, RunStatus
from osmosis_ai.eval._impl.results.safety_summary import TrainingSafetyTotals
from osmosis_ai.eval._impl.run_dir.journal import LatestRecords, WorkKey
from osmosis_ai.eval._impl.run_dir.layout import RunPaths
from osmosis_ai.eval._impl.run_dir.log import Redactor
from osmosis_ai.eval._impl.run_dir.manifest import write_json_atomic
from osmosis_ai.eval._impl.run_dir.records import IndexRows, RowRecord
from osmosis_ai.eval._impl.run_dir.trajectories import CallIndex, TrajectoryListing, trajectory_for
from osmosis_ai.eval._impl.scheduler import WorkItem


@dataclass(slots=True)
class SessionEnd:
    """How the dispatch part of a session ended."""

    started_at: datetime
    t0: float  # perf_counter at the start
    #: Records this session added to the journal (issue 39: a count, not their rollout ids).
    recorded: int = 0
    #: Where this session's first record went in the journal: every record from this offset
    #: on finished in this session (:func:`~osmosis_ai.eval._impl.run_dir.journal.append_offset`).
    journal_start: int = 0
    interrupted: bool = False
    halt_reason: str | None = None
    dispatched: int = 0
    archived: Path | None = None
    servers: list[dict[str, Any]] = field(default_factory=list)
    #: ``"budget"`` / ``"declined"`` when dispatch stopped early on purpose (:mod:`osmosis_ai.eval._impl.cost.budget`).
    stop_code: str | None = None
    budget: Budget | None = None
    #: Final figures of the adaptive concurrency limits (:mod:`osmosis_ai.eval._impl.adaptive`), when dispatched.
    concurrency: dict[str, Any] | None = None


def row_from_journal(
    item: WorkItem, record: dict[str, Any], *, resumed: bool, trajectory: str | None
) -> RowRecord:
    """The one place a journal record becomes a :class:`RowRecord`."""
    reward = record.get("reward")
    return RowRecord(
        prompt=dataset_prompt(item.row.initial_messages),
        label=item.row.label,
        row_index=item.row_index,
        run_index=item.run_index,
        source_row_index=item.row.source_index,
        status=record.get("status") or "failed",
        rollout_id=record.get("rollout_id"),
        reward=float(reward) if reward is not None else None,
        error_type=record.get("error_type"),
        error_message=record.get("error_message"),
        tokens=int(record.get("tokens") or 0),
        duration_ms=record.get("duration_ms"),
        policy_calls=int(record.get("policy_calls", record.get("llm_calls")) or 0),
        trajectory_filename=trajectory,
        resumed=resumed,
        attempt=record.get("attempt"),
        judge=record.get("judge"),
        cost=record.get("cost"),
        training_safety=record.get("training_safety"),
    )


def dataset_prompt(messages: list[dict[str, Any]]) -> str | None:
    """The row's first user message as the dataset gave it (kept for every row, failed or
    not), truncated like the readers truncate it."""
    from osmosis_ai.eval._impl.report.run_data import PROMPT_CHARS
    from osmosis_ai.rollout.types.messages import content_text

    for message in messages:
        if message.get("role") == "user":
            text = content_text(message.get("content"))
            return text[:PROMPT_CHARS] if text else None
    return None


def _positions(items: list[WorkItem], n: int) -> Callable[[WorkKey], int | None]:
    """A work key's place in ``items``: arithmetic for the plan's grid (rows x ``n`` samples, in
    row then sample order, what a session builds), a look-up table otherwise."""
    regular = n > 0 and all(
        item.row_index == i // n and item.run_index == i % n for i, item in enumerate(items)
    )
    if regular:
        size = len(items)

        def on_grid(key: WorkKey) -> int | None:
            row_index, run_index = key
            at = row_index * n + run_index
            return at if 0 <= run_index < n and 0 <= at < size else None

        return on_grid
    table = {(item.row_index, item.run_index): i for i, item in enumerate(items)}
    return table.get


def _in_key_order(latest: LatestRecords, items: list[WorkItem]) -> Iterator[dict[str, Any]]:
    """The latest records in work-key order (what ``sorted(load_latest(...).items())`` gives)."""
    inside = ((items[i].row_index, items[i].run_index, i) for i in latest.positions())
    outside = ((key[0], key[1], -1) for key in sorted(latest.outside))
    for row_index, run_index, at in heapq.merge(inside, outside):
        record = latest.at(at) if at >= 0 else latest.outside_record((row_index, run_index))
        if record is not None:
            yield record


def _latest_records(latest: LatestRecords, items: list[WorkItem]) -> Iterator[dict[str, Any]]:
    for at in latest.positions():
        record = latest.at(at)
        if record is not None:
            yield record
    for key in latest.outside:
        record = latest.outside_record(key)
        if record is not None:
            yield record


@dataclass(slots=True)
class _Pending:
    """A row made from its journal record, waiting for the rest of its group (the samples of
    one dataset row) before its tripwires are known."""

    row: RowRecord
    found: list[dict[str, Any]]
    digest: str | None
    code: list[dict[str, Any]]


class _Rows:
    """Finalisation's rows, made, written and totalled one at a time (issue 39: RSS stays flat
    over a run of any length). Each row is built from its latest journal record, waits only
    for the other samples of its dataset row (the group tripwires), then goes to
    ``index.jsonl`` (through an :class:`~osmosis_ai.atomic_file.AtomicWriter`) and into the
    running totals (:class:`MetricTotals` and the others). Held per row after that: the byte
    offset of its line (8 bytes, for :class:`IndexRows`), and what the totals must keep (see
    :class:`MetricTotals`)."""

    def __init__(self, plan: EvalPlan, writer: AtomicWriter, stored: _StoredIndex | None) -> None:
        knobs = plan.knobs
        self.silenced = knobs.silenced_tripwires
        self.writer = writer
        self.stored = stored
        self.metrics = MetricTotals(
            samples_per_row=knobs.n,
            pass_threshold=knobs.pass_threshold,
            metric_thresholds=knobs.metric_thresholds,
        )
        self.safety = TrainingSafetyTotals()
        self.tripwires = tripwires.TripwireTotals(self.silenced)
        self.tool_rows = self.tool_calls = 0
        self.by_tool: Counter[str] = Counter()
        self.counts = dict.fromkeys(("success", "failed", "skipped"), 0)
        self.resumed = 0
        self.offsets: array[int] = array("q")
        self.size = 0
        self.group: list[_Pending] = []

    def add(self, pending: _Pending) -> None:
        if self.group and self.group[0].row.row_index != pending.row.row_index:
            self.flush()
        self.group.append(pending)

    def flush(self) -> None:
        """Write the group: each row with its row, group and code findings, in that order."""
        group, self.group = self.group, []
        keys = [(p.row.row_index, p.row.run_index) for p in group]
        grouped = tripwires.group_findings(
            (p.row for p in group), {key: p.digest for key, p in zip(keys, group, strict=True)}
        )
        for key, p in zip(keys, group, strict=True):
            findings = [*p.found, *grouped.get(key, ()), *p.code]
            (row,) = tripwires.with_findings([p.row], {key: findings}, self.silenced)
            self._write(row)
        if group:  # the samples of a dataset row are consecutive: this row is complete
            self.metrics.close_row(group[0].row.row_index)

    def _write(self, row: RowRecord) -> None:
        data = row.to_json()
        if self.stored is not None:
            self.stored.compare(data)
        self.offsets.append(self.size)
        self.size += self.writer.write(json.dumps(data, allow_nan=False) + "\n")
        self.metrics.add(ItemResult.of_row(row))
        self.safety.add(row.training_safety)
        self.tripwires.add(row)
        if row.tool_errors:
            self.tool_rows += 1
            self.tool_calls += row.tool_error_count
            self.by_tool.update(e.get("tool", "?") for e in row.tool_errors)
        if row.status in self.counts:
            self.counts[row.status] += 1
        self.resumed += row.resumed

    @property
    def total(self) -> int:
        return len(self.offsets)

    def summary(self, plan: EvalPlan, total_work_items: int, end: SessionEnd) -> dict[str, Any]:
        """The ``summary`` block of ``metrics.json``."""
        summary = self.metrics.summary(total_work_items)
        if self.tool_rows:
            # Rows in which a tool raised, the calls that did, and the calls per tool.
            summary["tool_errors"] = {
                "rows": self.tool_rows,
                "calls": self.tool_calls,
                "by_tool": dict(sorted(self.by_tool.items())),
            }
        summary["training_safety"] = self.safety.summary(token_ids_requested=plan.options.token_ids)
        summary["tripwires"] = self.tripwires.summary()
        if end.budget is not None:
            summary["budget"] = end.budget.to_json()
        if end.concurrency is not None:
            summary["concurrency"] = end.concurrency
        return summary


def write_rows(
    plan: EvalPlan,
    paths: RunPaths,
    items: list[WorkItem],
    end: SessionEnd,
    calls_by_rollout: CallIndex,
    reproducibility: dict[str, Any],
    latest: LatestRecords,
    rows: _Rows,
) -> None:
    """One enriched :class:`RowRecord` per finished work item, in work-item order (prompt,
    label, answer, grader metrics and, for failures, the traceback, redacted like the log),
    with the tripwires that fired on it, into ``rows``. ``items`` are in row then sample order
    (a session's), so the samples of a dataset row are consecutive. A record finished in this
    session when it is at or after ``end.journal_start`` in the journal."""
    from osmosis_ai.eval._impl.report.run_data import read_json, row_with_facts

    redact = plan_redactor(plan)
    listing = TrajectoryListing.of(paths, latest.position, len(items))
    root = str(paths.root)
    changed_now = _source_changed(plan, end.recorded)
    first = None
    if "code_digest" in latest.keys_seen:
        first = tripwires.first_code_digest(_in_key_order(latest, items))
    for at in latest.positions():
        item = items[at]
        record = latest.at(at)
        if record is None:
            continue
        this_session = end.recorded > 0 and latest.offset(at) >= end.journal_start
        trajectory, document = trajectory_for(
            paths,
            record,
            calls_by_rollout.get(str(record.get("rollout_id")), []),
            rebuild=this_session,
            reproducibility=reproducibility,
            listing=listing,
        )
        if document is None and trajectory is not None:
            document = read_json(f"{root}/{trajectory}")
        row = row_with_facts(
            paths.root,
            row_from_journal(item, record, resumed=not this_session, trajectory=trajectory),
            document,
        )
        if row.traceback:
            row = replace(row, traceback=redact(row.traceback))
        rows.add(
            _Pending(
                row,
                tripwires.row_findings(row, document, harbor=HARBOR_SAMPLE_KEY in record),
                tripwires.transcript_digest(document),
                tripwires.code_finding(
                    record, first=first, changed_now=changed_now, this_session=this_session
                ),
            )
        )
    rows.flush()


def _source_changed(plan: EvalPlan, recorded: int) -> bool:
    """Whether the rollout's source changed while this session ran (``grader_changed``)."""
    if not (recorded and plan.source.rollout_dir.is_dir()):
        return False
    from osmosis_ai.eval._impl.run_dir.manifest import source_digest

    locked = plan.inputs.get("rollout", {}).get("source_digest")
    now = source_digest(plan.source.rollout_dir, exclude=(plan.output_root,))
    return locked is not None and now != locked


def _update_reproducibility(
    plan: EvalPlan,
    paths: RunPaths,
    manifest: dict[str, Any],
    calls: CallIndex,
    latest: LatestRecords,
    items: list[WorkItem],
) -> dict[str, Any]:
    """This session's record, merged with earlier sessions' observations, into the manifest;
    the Harbor tasks are those of the journal's latest records (every session's)."""
    earlier = manifest.get("reproducibility")
    seen = calls.observed or observed(())
    record = merged(run_record(plan), earlier if isinstance(earlier, dict) else {}, seen)
    tasks = (
        harbor_tasks(_latest_records(latest, items))
        if HARBOR_SAMPLE_KEY in latest.keys_seen
        else []
    )
    record = with_harbor_tasks(record, tasks)
    if record != earlier:
        manifest["reproducibility"] = record
        write_json_atomic(paths.manifest, manifest)
    return record


def _status(interrupted: bool, failed: int, pending: int) -> RunStatus:
    if interrupted:
        return "interrupted"
    return "partial" if failed or pending else "success"


def finalize(
    plan: EvalPlan,
    paths: RunPaths,
    manifest: dict[str, Any],
    items: list[WorkItem],
    end: SessionEnd,
) -> EvalRun:
    """The run's results from its journal, in one pass over it and its rows (see :class:`_Rows`)."""
    calls = CallIndex.of(paths) if end.recorded else CallIndex()
    stored = _StoredIndex.of(paths, end)
    writer = AtomicWriter(paths.index, durable=True)
    rows = _Rows(plan, writer, stored)
    try:
        with LatestRecords(paths.journal, _positions(items, plan.knobs.n), len(items)) as latest:
            reproducibility = _update_reproducibility(plan, paths, manifest, calls, latest, items)
            write_rows(plan, paths, items, end, calls, reproducibility, latest, rows)
    except BaseException:
        writer.abort()
        raise
    finally:
        calls.close()
        if stored is not None:
            stored.close()
    summary = rows.summary(plan, len(items), end)
    counts = rows.counts
    pending = len(items) - rows.total
    status = _status(end.interrupted, counts["failed"], pending)
    if (
        plan.options.require_append_only
        and not end.interrupted
        and summary["training_safety"].get("broken")
    ):
        # A gate that fails the run says so everywhere: status, stop_code, metrics.json.
        status, end.stop_code = "failed", "append_only"
    elif plan.options.fail_on_tripwire and not end.interrupted and summary["tripwires"]["rows"]:
        # --fail-on-tripwire (CI): an unsilenced reward-hacking finding fails the run.
        status, end.stop_code = "failed", "tripwire"
    duration_ms = (time.perf_counter() - end.t0) * 1000
    kept = stored.unchanged(end, status, summary) if stored is not None else None
    if kept is not None:
        # Nothing ran and nothing would change: the run's files (and its provenance: started
        # at, duration, command line) stay as the session that made them wrote them.
        writer.abort()
        duration = kept.get("duration_ms")
        duration_ms = float(duration) if isinstance(duration, int | float) else duration_ms
        # Every row is from an earlier session (this one dispatched nothing).
        index = IndexRows(paths.index, resumed=True)
    else:
        writer.commit()
        index = IndexRows(paths.index, rows.offsets)
        _write_metrics(plan, paths, manifest, end, status, pending, duration_ms, summary)
    return EvalRun(
        status=status,
        run_name=plan.run_name,
        run_dir=paths.root,
        local_run_id=manifest["local_run_id"],
        dataset=plan.dataset_path,
        model=plan.upstream.model,
        rollout=plan.rollout_name,
        total_work_items=len(items),
        dispatched=end.dispatched,
        succeeded=counts["success"],
        failed=counts["failed"],
        skipped=counts["skipped"],
        resumed=rows.resumed,
        pending=pending,
        duration_ms=duration_ms,
        metrics=summary,
        rows=index,
        archived_to=end.archived,
        halt_reason=end.halt_reason,
        servers=end.servers,
        stop_code=end.stop_code,
        unchanged=kept is not None,
    )


class _StoredIndex:
    """A rerun that dispatches nothing compares its rows with the stored ``index.jsonl`` as it
    makes them (one stored line at a time), and keeps the run's files when they are the same."""

    def __init__(self, paths: RunPaths, stored: dict[str, Any], fh: TextIO) -> None:
        self.paths = paths
        self.stored = stored
        self.fh = fh
        self.same = True

    @classmethod
    def of(cls, paths: RunPaths, end: SessionEnd) -> _StoredIndex | None:
        if end.dispatched or end.recorded or end.interrupted or end.halt_reason:
            return None
        try:
            stored = json.loads(paths.metrics.read_text(encoding="utf-8"))
            fh = paths.index.open(encoding="utf-8")
        except (OSError, ValueError):
            return None
        return cls(paths, stored, fh)

    def compare(self, row: dict[str, Any]) -> None:
        """The next row (its JSON form) against the next stored line."""
        if not self.same:
            return
        line = self.fh.readline()
        try:
            self.same = bool(line) and _without(json.loads(line), ("resumed",)) == _without(
                row, ("resumed",)
            )
        except ValueError:
            self.same = False

    def close(self) -> None:
        if self.same:
            self.same = not self.fh.read(1)  # no stored line left over
        self.fh.close()

    def unchanged(
        self, end: SessionEnd, status: str, summary: dict[str, Any]
    ) -> dict[str, Any] | None:
        """The stored ``eval_run`` block when the results equal what is on disk; else ``None``."""
        stored = self.stored
        run = stored.get("eval_run") if isinstance(stored, dict) else None
        if not isinstance(run, dict):
            return None
        stored_summary = stored.get("summary")
        if not isinstance(stored_summary, dict):
            return None
        # What describes a session rather than the results: the concurrency it adapted to, and
        # whether a row finished in an earlier session (every row has, on a rerun).
        session_keys = ("concurrency",)
        same = (
            self.same
            and run.get("status") == status
            and run.get("stop_code") == end.stop_code
            and _without(stored_summary, session_keys)
            == _without(json.loads(json.dumps(summary)), session_keys)
        )
        return run if same else None


def _without(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in keys}


def _write_metrics(
    plan: EvalPlan,
    paths: RunPaths,
    manifest: dict[str, Any],
    end: SessionEnd,
    status: str,
    pending: int,
    duration_ms: float,
    summary: dict[str, Any],
) -> None:
    write_json_atomic(
        paths.metrics,
        {
            "eval_run": {
                "id": manifest["local_run_id"],
                "status": status,
                "name": plan.run_name,
                "dataset_name": plan.dataset_path.name,
                "model_name": plan.upstream.model,
                "rollout_name": plan.rollout_name,
                "duration_ms": round(duration_ms, 1),
                "started_at": end.started_at.isoformat(),
                "completed_at": datetime.now(UTC).isoformat(),
                "pending": pending,
                # why dispatch stopped early (--max-failures, a broken endpoint, the server)
                "halt_reason": end.halt_reason,
                # why the run stopped or failed on purpose: budget, declined, append_only
                "stop_code": end.stop_code,
                # provenance of this session (the report's header)
                "command_line": _command_line(plan),
                "versions": run_versions(),
            },
            "summary": summary,
        },
    )


def plan_redactor(plan: EvalPlan) -> Redactor:
    """Redacts the run's secrets: the upstream API key and the credentials in its URL, the
    rollout's secret values, and this process's credentials (the judge's key among them: the
    environment variables named like a credential)."""
    from osmosis_ai._util.redaction import env_secrets, url_secrets

    redactor = Redactor()
    redactor.add(plan.upstream.api_key)
    base_url = getattr(plan.upstream, "base_url", None)
    for value in (*url_secrets(base_url), *env_secrets(), *plan.secrets.values()):
        redactor.add(value)
    return redactor


def _command_line(plan: EvalPlan) -> str:
    """This process's command line, URL credentials and known secret values masked."""
    return plan_redactor(plan)(shlex.join(sys.argv))
