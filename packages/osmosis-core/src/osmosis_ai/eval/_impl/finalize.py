"""The end of every session: journal → per-row records, trajectories, ``index.jsonl``, metrics.

Why it runs on every path (done, partial, halted, interrupted): the results on disk must always
describe the journal. Rows finished in this session get their trajectory assembled (the server
has stopped, so every trajectory file is on disk); rows from earlier sessions keep theirs.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from osmosis_ai.eval._impl.cost.budget import Budget
from osmosis_ai.eval._impl.plan.plan import EvalPlan
from osmosis_ai.eval._impl.results import tripwires
from osmosis_ai.eval._impl.results.metrics import ItemResult, compute_metrics
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
from osmosis_ai.eval._impl.results.safety_summary import summarize_training_safety
from osmosis_ai.eval._impl.run_dir.journal import WorkKey, load_latest
from osmosis_ai.eval._impl.run_dir.layout import RunPaths
from osmosis_ai.eval._impl.run_dir.log import Redactor
from osmosis_ai.eval._impl.run_dir.manifest import write_json_atomic
from osmosis_ai.eval._impl.run_dir.records import RowRecord, write_index
from osmosis_ai.eval._impl.run_dir.trajectories import CallIndex, TrajectoryListing, trajectory_for
from osmosis_ai.eval._impl.scheduler import WorkItem


@dataclass(slots=True)
class SessionEnd:
    """How the dispatch part of a session ended."""

    started_at: datetime
    t0: float  # perf_counter at the start
    session_ids: set[str]
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


def collect_rows(
    plan: EvalPlan,
    paths: RunPaths,
    items: list[WorkItem],
    session_ids: set[str],
    calls_by_rollout: CallIndex,
    reproducibility: dict[str, Any],
    latest: dict[WorkKey, dict[str, Any]],
) -> list[RowRecord]:
    """One enriched :class:`RowRecord` per finished work item (prompt, label, answer, grader
    metrics and, for failures, the traceback, redacted like the log), with the tripwires that
    fired on it."""
    from osmosis_ai.eval._impl.report.run_data import read_json, row_with_facts

    redact = plan_redactor(plan)
    rows: list[RowRecord] = []
    listing = TrajectoryListing.of(paths)
    findings: dict[WorkKey, list[dict[str, Any]]] = {}
    digests: dict[WorkKey, str | None] = {}
    root = str(paths.root)
    for item in items:
        key = (item.row_index, item.run_index)
        record = latest.get(key)
        if record is None:
            continue
        this_session = record.get("rollout_id") in session_ids
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
        rows.append(row)
        found = tripwires.row_findings(row, document, harbor=HARBOR_SAMPLE_KEY in record)
        if found:
            findings[key] = found
        digests[key] = tripwires.transcript_digest(document)
    return _with_tripwires(plan, rows, findings, digests, latest, session_ids)


def _with_tripwires(
    plan: EvalPlan,
    rows: list[RowRecord],
    findings: dict[WorkKey, list[dict[str, Any]]],
    digests: dict[WorkKey, str | None],
    latest: dict[WorkKey, dict[str, Any]],
    session_ids: set[str],
) -> list[RowRecord]:
    """The rows with every tripwire's findings (:mod:`.results.tripwires`)."""
    changed_now = False
    if session_ids and plan.source.rollout_dir.is_dir():
        from osmosis_ai.eval._impl.run_dir.manifest import source_digest

        locked = plan.inputs.get("rollout", {}).get("source_digest")
        now = source_digest(plan.source.rollout_dir, exclude=(plan.output_root,))
        changed_now = locked is not None and now != locked
    for extra in (
        tripwires.group_findings(rows, digests),
        tripwires.code_findings(latest, changed_now=changed_now, session_ids=session_ids),
    ):
        for key, found in extra.items():
            findings.setdefault(key, []).extend(found)
    return tripwires.with_findings(rows, findings, plan.knobs.silenced_tripwires)


def _update_reproducibility(
    plan: EvalPlan,
    paths: RunPaths,
    manifest: dict[str, Any],
    calls: CallIndex,
    latest: dict[WorkKey, dict[str, Any]],
) -> dict[str, Any]:
    """This session's record, merged with earlier sessions' observations, into the manifest;
    the Harbor tasks are those of the journal's latest records (every session's)."""
    earlier = manifest.get("reproducibility")
    seen = calls.observed or observed(())
    record = merged(run_record(plan), earlier if isinstance(earlier, dict) else {}, seen)
    record = with_harbor_tasks(record, harbor_tasks(latest.values()))
    if record != earlier:
        manifest["reproducibility"] = record
        write_json_atomic(paths.manifest, manifest)
    return record


def _status(interrupted: bool, failed: int, pending: int) -> RunStatus:
    if interrupted:
        return "interrupted"
    return "partial" if failed or pending else "success"


def _summary(
    plan: EvalPlan, rows: list[RowRecord], total_work_items: int, end: SessionEnd
) -> dict[str, Any]:
    """The ``summary`` block of ``metrics.json`` for ``rows``."""
    summary = compute_metrics(
        (ItemResult.of_row(r) for r in rows),
        samples_per_row=plan.knobs.n,
        pass_threshold=plan.knobs.pass_threshold,
        total_work_items=total_work_items,
        metric_thresholds=plan.knobs.metric_thresholds,
    )
    tool_errors = _tool_errors(rows)
    if tool_errors is not None:
        summary["tool_errors"] = tool_errors
    summary["training_safety"] = summarize_training_safety(
        (r.training_safety for r in rows), token_ids_requested=plan.options.token_ids
    )
    summary["tripwires"] = tripwires.summarize(rows, plan.knobs.silenced_tripwires)
    if end.budget is not None:
        summary["budget"] = end.budget.to_json()
    if end.concurrency is not None:
        summary["concurrency"] = end.concurrency
    return summary


def _tool_errors(rows: list[RowRecord]) -> dict[str, Any] | None:
    """Rows in which a tool raised, the calls that did, and the calls per tool."""
    with_errors = [r for r in rows if r.tool_errors]
    if not with_errors:
        return None
    by_tool = Counter(e.get("tool", "?") for r in with_errors for e in r.tool_errors or [])
    return {
        "rows": len(with_errors),
        "calls": sum(r.tool_error_count for r in with_errors),
        "by_tool": dict(sorted(by_tool.items())),
    }


def finalize(
    plan: EvalPlan,
    paths: RunPaths,
    manifest: dict[str, Any],
    items: list[WorkItem],
    end: SessionEnd,
) -> EvalRun:
    calls = CallIndex.of(paths) if end.session_ids else CallIndex()
    try:
        latest = load_latest(paths.journal)
        reproducibility = _update_reproducibility(plan, paths, manifest, calls, latest)
        rows = collect_rows(plan, paths, items, end.session_ids, calls, reproducibility, latest)
    finally:
        calls.close()
    summary = _summary(plan, rows, len(items), end)
    counts = {s: sum(1 for r in rows if r.status == s) for s in ("success", "failed", "skipped")}
    pending = len(items) - len(rows)
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
    stored = _unchanged(paths, end, rows, status, summary)
    if stored is not None:
        # Nothing ran and nothing would change: the run's files (and its provenance: started
        # at, duration, command line) stay as the session that made them wrote them.
        duration = stored.get("duration_ms")
        duration_ms = float(duration) if isinstance(duration, int | float) else duration_ms
    else:
        write_index(paths.index, rows)
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
        resumed=sum(1 for r in rows if r.resumed),
        pending=pending,
        duration_ms=duration_ms,
        metrics=summary,
        rows=rows,
        archived_to=end.archived,
        halt_reason=end.halt_reason,
        servers=end.servers,
        stop_code=end.stop_code,
        unchanged=stored is not None,
    )


def _unchanged(
    paths: RunPaths, end: SessionEnd, rows: list[RowRecord], status: str, summary: dict[str, Any]
) -> dict[str, Any] | None:
    """The stored ``eval_run`` block when this session dispatched nothing and its results
    equal what is on disk (a rerun of a finished run); else ``None``."""
    if end.dispatched or end.session_ids or end.interrupted or end.halt_reason:
        return None
    try:
        stored = json.loads(paths.metrics.read_text(encoding="utf-8"))
        index = paths.index.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
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
        run.get("status") == status
        and run.get("stop_code") == end.stop_code
        and _without(stored_summary, session_keys)
        == _without(json.loads(json.dumps(summary)), session_keys)
        and [_without(json.loads(line), ("resumed",)) for line in index.splitlines()]
        == [_without(row.to_json(), ("resumed",)) for row in rows]
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
