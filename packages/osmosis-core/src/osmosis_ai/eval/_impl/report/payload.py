"""What the HTML report embeds: plain JSON for the small parts, gzip+base64 for rows and
transcripts (decoded in the page with ``DecompressionStream``, transcripts only on demand)."""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Callable
from typing import Any

from osmosis_ai.eval._impl.report.compare import RunComparison
from osmosis_ai.eval._impl.report.failures import group_failures
from osmosis_ai.eval._impl.report.run_data import RunData, RunHeader, outcome
from osmosis_ai.eval._impl.report.stats import mean_interval, score_range, wilson_interval
from osmosis_ai.eval._impl.results.safety_summary import (
    missing_token_ids_reason,
    summarize_training_safety,
    verdict_cause,
)
from osmosis_ai.eval._impl.run_dir.records import RowRecord

ANSWER_CHARS = 500

type Redact = Callable[[str], str]


def pack(value: Any, redact: Redact | None = None) -> str:
    """JSON → (redacted) → gzip (mtime 0: byte-identical output) → base64."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if redact is not None:
        text = redact(text)
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31 = gzip container
    data = compressor.compress(text.encode()) + compressor.flush()
    return base64.b64encode(data).decode("ascii")


def _header(header: RunHeader) -> dict[str, Any]:
    return {
        "name": header.name,
        "run_id": header.run_id,
        "status": header.status,
        "model": header.model,
        "base_url_host": header.base_url_host,
        "rollout": header.rollout,
        "entrypoint": header.entrypoint,
        "dataset_file": header.dataset_file,
        "dataset_sha256": header.dataset_sha256,
        "selected_rows": header.selected_rows,
        "source_digest": header.source_digest,
        "n": header.n,
        "pass_threshold": header.pass_threshold,
        "started_at": header.started_at,
        "completed_at": header.completed_at,
        "duration_ms": header.duration_ms,
        "command": header.command,
        "versions": header.versions,
        "reproducibility": header.reproducibility,
        "pending": header.pending,
        "halt_reason": header.halt_reason,
        "stop_code": header.stop_code,
    }


def _metrics(run: RunData) -> dict[str, Any]:
    summary = run.header.summary
    threshold = run.header.pass_threshold
    rewards = [r.reward for r in run.rows if r.status == "success" and r.reward is not None]
    passed = sum(1 for value in rewards if value >= threshold)
    mean = mean_interval(rewards, clip=score_range(rewards))
    rate = wilson_interval(passed, len(rewards))
    return {
        "total": len(run.rows),
        "total_work_items": summary.get("total_work_items", len(run.rows)),
        "graded": len(rewards),
        "passed": passed,
        "failed": sum(1 for r in run.rows if r.status == "failed"),
        "skipped": sum(1 for r in run.rows if r.status == "skipped"),
        "mean": run.header.figures.mean_reward,
        "mean_ci": mean.as_dict() if mean else None,
        "pass_rate_ci": rate.as_dict() if rate else None,
        "pass_at_k": summary.get("pass_at_k", []),
        "tokens": summary.get("tokens_used", sum(r.tokens for r in run.rows)),
        "failures_by_type": summary.get("failures_by_type", {}),
        "failure_groups": [g.as_dict() for g in group_failures(run.rows)],
        "cost_usd": run.header.figures.cost_usd,
        "grader_metrics": dict(run.header.figures.grader_metrics),
        "tool_errors": summary.get("tool_errors"),
        "tripwires": summary.get("tripwires"),
        "training_safety": _training_safety(run),
    }


def _training_safety(run: RunData) -> dict[str, Any]:
    """The run's summary, recomputed from the rows (same as ``metrics.json`` when it has one)."""
    stored = run.header.summary.get("training_safety") or {}
    summary = summarize_training_safety(
        (r.training_safety for r in run.rows),
        token_ids_requested=stored.get("token_ids_requested"),
    )
    summary["token_ids_missing"] = missing_token_ids_reason(summary)
    first: dict[str, list[int]] = {}
    for row in run.rows:
        cause = verdict_cause(row.training_safety)
        if cause and cause != "ok" and cause not in first:
            first[cause] = [row.row_index, row.run_index]
    summary["first_rows"] = first
    return summary


def _row(row: RowRecord, threshold: float) -> dict[str, Any]:
    return {
        "i": row.row_index,
        "s": row.run_index,
        "src": row.source_row_index,
        "o": outcome(row, threshold),
        "r": row.reward,
        "d": row.duration_ms,
        "t": row.tokens,
        "c": row.policy_calls,
        "et": row.error_type,
        "em": row.error_message,
        "p": row.prompt,
        "l": row.label,
        "a": row.answer[:ANSWER_CHARS] if row.answer else row.answer,
        "ts": verdict_cause(row.training_safety),
        "cu": row.cost_usd,
        "te": row.tool_error_count,
        # the reward-hacking tripwires that fired and are not silenced (names)
        "tw": [f["name"] for f in row.tripwires or () if "silenced" not in f],
    }


def _details(run: RunData) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for row in run.rows:
        transcript = run.transcripts.get((row.row_index, row.run_index))
        out.append(
            {
                "m": transcript.messages if transcript else [],
                "c": transcript.calls if transcript else [],
                "x": row.metrics or {},
                "tb": row.traceback,
                "ph": row.failed_phase,
                "ex": row.explanation,
                "te": row.tool_errors or [],
                "em": row.error_message,
                "tr": row.trajectory_filename,
                "ts": row.training_safety,
            }
        )
    return out


def build_payload(
    run: RunData, compare: RunComparison | None, redact: Redact | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """(plain JSON meta, {script id: packed blob})."""
    runs = [run] if compare is None else [run, compare.a]
    meta: dict[str, Any] = {
        "runs": [
            {"header": _header(r.header), "metrics": _metrics(r), "rows": len(r.rows)} for r in runs
        ],
    }
    blobs: dict[str, str] = {}
    for index, r in enumerate(runs):
        threshold = r.header.pass_threshold
        blobs[f"rows-{index}"] = pack([_row(row, threshold) for row in r.rows], redact)
        blobs[f"details-{index}"] = pack(_details(r), redact)
    if compare is not None:
        meta["compare"] = compare.summary()
        blobs["pairs"] = pack([p.as_dict() for p in compare.pairs], redact)
    text = json.dumps(meta, ensure_ascii=False, allow_nan=False)
    if redact is not None:
        meta = json.loads(redact(text))
    return meta, blobs
