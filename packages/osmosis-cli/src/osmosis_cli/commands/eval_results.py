"""``osmosis eval list/show/compare`` and ``eval status`` of a local run.

Thin shells over :mod:`osmosis_ai.eval.report`: every figure comes from the run's files
through :func:`~osmosis_ai.eval.report.load_run`; this module only resolves the run and renders.
``eval report`` and the end of ``eval run`` are in :mod:`osmosis_cli.commands.eval_report`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from collections.abc import Mapping

    from osmosis_ai.eval import RowRecord
    from osmosis_ai.eval.report import RunComparison, RunData, RunHeader
    from osmosis_cli.output import Output

RunsDirOption = Annotated[
    Path | None,
    typer.Option("--runs-dir", help="Local runs folder (default: <workspace>/.osmosis/evals)."),
]


def runs_root(runs_dir: Path | None) -> Path:
    """Where local runs live: ``--runs-dir``, else ``<workspace>/.osmosis/evals``."""
    if runs_dir is not None:
        return runs_dir
    from osmosis_ai.eval.report import RUNS_FOLDER
    from osmosis_cli.workspace import find_workspace

    return (find_workspace() or Path.cwd()) / RUNS_FOLDER


def local_run_dir(run: str, runs_dir: Path | None) -> Path | None:
    """The run directory named (or pointed at) by ``run``, or ``None``."""
    from osmosis_ai.eval.report import is_run_dir

    as_path = Path(run)
    if is_run_dir(as_path):
        return as_path
    candidate = runs_root(runs_dir) / run
    return candidate if "/" not in run and is_run_dir(candidate) else None


def resolve_run(run: str, runs_dir: Path | None) -> Path:
    from osmosis_cli.errors import CLIError, CLIErrorCode

    found = local_run_dir(run, runs_dir)
    if found is not None:
        return found
    root = runs_root(runs_dir)
    names = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    hint = f" Runs in {root}: {', '.join(names[:10])}." if names else f" No runs in {root}."
    raise CLIError(
        CLIErrorCode.NOT_FOUND,
        f"no local eval run {run!r}.{hint} Pass a run name from `osmosis eval list` or the "
        "path of a run folder.",
        details={"run": run, "runs_folder": str(root)},
    )


def _load(run: str, runs_dir: Path | None, *, transcripts: bool = False) -> RunData:
    from osmosis_ai.eval.report import load_run

    return load_run(resolve_run(run, runs_dir), transcripts=transcripts)


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def header_summary(header: RunHeader) -> dict[str, Any]:
    """The run as ``eval list`` / ``eval status`` show it."""
    figures = header.figures
    return {
        "name": header.name,
        "status": header.status,
        "started_at": header.started_at or header.created_at,
        "completed_at": header.completed_at,
        "model": header.model,
        "rollout": header.rollout,
        "rows": figures.total_samples,
        "graded": figures.graded,
        "failed": figures.failed,
        "skipped": figures.skipped,
        "mean_reward": figures.mean_reward,
        "pass_rate": figures.pass_rate,
        "cost_usd": figures.cost_usd,
        "pending": header.pending,
        "halt_reason": header.halt_reason,
        "stop_code": header.stop_code,
        "path": str(header.path),
    }


def row_summary(row: RowRecord, threshold: float) -> dict[str, Any]:
    from osmosis_ai.eval.report import innermost_frame

    where = innermost_frame(row.traceback)
    return {
        "row_index": row.row_index,
        "run_index": row.run_index,
        "source_row_index": row.source_row_index,
        "status": row.status,
        "outcome": _outcome(row, threshold),
        "passed": None if row.reward is None else row.reward >= threshold,
        "reward": row.reward,
        "duration_ms": row.duration_ms,
        "tokens": row.tokens,
        "policy_calls": row.policy_calls,
        "error_type": row.error_type,
        "error_message": row.error_message,
        "error_location": str(where) if where else None,
        "failed_phase": row.failed_phase,
        "cost_usd": row.cost_usd,
        "prompt": row.prompt,
        "label": row.label,
        "answer": row.answer,
        "metrics": row.metrics,
        "explanation": row.explanation,
        "tool_errors": row.tool_error_count,
        "tool_error_list": row.tool_errors,
        # reward-hacking tripwires that fired on the row (docs/tripwires.md)
        "tripwires": row.tripwires or [],
        "trajectory_filename": row.trajectory_filename,
    }


def _outcome(row: RowRecord, threshold: float) -> str:
    """What the report calls the row: ``pass``, ``below threshold``, ``failed``, ``skipped``."""
    if row.status == "success" and row.reward is not None:
        return "pass" if row.reward >= threshold else "below threshold"
    return row.status


# ---- eval list ---------------------------------------------------------------------------


def list_local(runs_dir: Path | None, limit: int, offset: int, out: Output) -> None:
    from osmosis_ai.eval.report import find_runs
    from osmosis_cli.output import Column

    headers = find_runs(runs_root(runs_dir))
    page = headers[offset : offset + limit]
    more = offset + limit < len(headers)
    out.emit_list(
        [header_summary(h) for h in page],
        columns=[
            Column("name", "run"),
            Column("started_at", "started"),
            Column("model", "model"),
            Column("rollout", "rollout"),
            Column("rows", "rows"),
            Column("mean_reward", "mean reward"),
            Column("cost_usd", "cost $"),
            Column("status", "status", _list_status),
        ],
        plain=lambda item: (
            "\t".join(
                _fmt(item.get(k)) for k in ("name", "started_at", "model", "rows", "mean_reward")
            )
            + f"\t{item['status']}"
        ),
        title=f"local eval runs ({runs_root(runs_dir)})",
        empty=f"No local eval runs in {runs_root(runs_dir)}. Start one with `osmosis eval run`.",
        total_count=len(headers),
        next_offset=offset + limit if more else None,
    )


def _list_status(item: Mapping[str, Any]) -> str:
    """The status, and "stopped" when the run halted (its reason: ``eval show``)."""
    status = str(item.get("status"))
    return f"{status}, stopped" if item.get("halt_reason") else status


# ---- eval show / status --------------------------------------------------------------------


def _metrics_lines(data: RunData) -> dict[str, Any]:
    from osmosis_ai.eval.report import group_failures, mean_interval, score_range, wilson_interval

    header, summary = data.header, data.header.summary
    rewards = [r.reward for r in data.rows if r.status == "success" and r.reward is not None]
    mean = mean_interval(rewards, clip=score_range(rewards))
    passed = sum(1 for r in rewards if r >= header.pass_threshold)
    rate = wilson_interval(passed, len(rewards))
    groups = group_failures(data.rows)
    return {
        **header_summary(header),
        "mean_reward_ci95": [mean.low, mean.high] if mean else None,
        "pass_rate_ci95": [rate.low, rate.high] if rate else None,
        "denominator": f"{len(rewards)} graded ({summary.get('failed', 0)} failed and "
        f"{summary.get('skipped', 0)} skipped excluded)",
        "pass_at_k": summary.get("pass_at_k", []),
        "grader_metrics": dict(header.figures.grader_metrics),
        "tool_errors": summary.get("tool_errors"),
        "failures": [g.describe() for g in groups],
    }


def status_local(run_dir: Path, out: Output) -> None:
    from osmosis_ai.eval.report import load_run

    data = load_run(run_dir, transcripts=False)
    out.emit_detail(_metrics_lines(data), title=f"eval run {data.header.name}")


def _show_row(data: RunData, row: int, sample: int, out: Output) -> None:
    from osmosis_ai.eval.report import format_transcript
    from osmosis_cli.errors import CLIError, CLIErrorCode

    match = next((r for r in data.rows if (r.row_index, r.run_index) == (row, sample)), None)
    transcript = data.transcripts.get((row, sample))
    if match is None:
        raise CLIError(
            CLIErrorCode.NOT_FOUND,
            f"run {data.header.name!r} has no row {row} sample {sample}; rows are 0.."
            f"{max((r.row_index for r in data.rows), default=-1)} (see `osmosis eval show`)",
            details={"row": row, "sample": sample},
        )
    detail = row_summary(match, data.header.pass_threshold)
    detail["cost"] = match.cost
    detail["traceback"] = match.traceback
    if out.is_json:
        detail["messages"] = transcript.messages if transcript else []
        detail["policy_calls_detail"] = transcript.calls if transcript else []
        out.emit_detail(detail)
        return
    text = format_transcript(transcript.messages, transcript.calls) if transcript else ""
    lines = [f"{k}: {_fmt(v)}" for k, v in detail.items() if k != "traceback" and v is not None]
    if match.traceback:
        lines += ["traceback:", *match.traceback.rstrip().splitlines()]
    lines += ["", text or "(no trajectory was written for this row)"]
    out.emit_message("\n".join(lines))


def show(
    run: Annotated[str, typer.Argument(help="Run name (see `osmosis eval list`) or run folder.")],
    failed: Annotated[bool, typer.Option("--failed", help="Only rows that failed.")] = False,
    row: Annotated[
        int | None, typer.Option("--row", help="Print row N's transcript (with tool calls).")
    ] = None,
    sample: Annotated[int, typer.Option("--sample", help="Sample index with --row.")] = 0,
    below_threshold: Annotated[
        bool,
        typer.Option("--below-threshold", help="Only graded rows below the pass threshold."),
    ] = False,
    reward_range: Annotated[
        str | None,
        typer.Option(
            "--reward-range",
            metavar="LOW:HIGH",
            help="Only graded rows with LOW <= reward <= HIGH (either side may be empty).",
        ),
    ] = None,
    tool_errors: Annotated[
        bool, typer.Option("--tool-errors", help="Only rows in which a tool call raised.")
    ] = False,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, metavar="N", help="Show at most N rows (after filters)."),
    ] = None,
    runs_dir: RunsDirOption = None,
) -> None:
    """Summary of a local eval run and its rows, or one row's transcript (--row)."""
    from osmosis_cli.output import Column, get_output

    out = get_output()
    bounds = _reward_bounds(reward_range)
    data = _load(run, runs_dir, transcripts=row is not None)
    if row is not None:
        _show_row(data, row, sample, out)
        return
    threshold = data.header.pass_threshold
    selected = _selected_rows(data, failed, below_threshold, bounds, tool_errors)
    matched = len(selected)
    rows = [row_summary(r, threshold) for r in selected[:limit]]
    summary = _metrics_lines(data)
    if out.is_json:
        out.emit_detail({**summary, "rows_matched": matched, "rows": rows})
        return
    if len(rows) < matched:
        summary["rows shown"] = f"{len(rows)} of {matched} (--limit)"
    out.emit_detail(summary, title=f"eval run {data.header.name}")
    out.emit_list(
        rows,
        columns=[
            Column("row_index", "row"),
            Column("run_index", "sample"),
            Column("outcome", "outcome"),
            Column("reward", "reward"),
            Column("duration_ms", "ms"),
            Column("error_type", "error"),
            Column("error_location", "where"),
            Column("tool_errors", "tool errors"),
            Column("cost_usd", "cost $"),
            Column("prompt", "prompt"),
            Column("label", "label"),
            Column("answer", "answer"),
        ],
        plain=lambda r: "\t".join(
            _fmt(r.get(k))
            for k in ("row_index", "run_index", "outcome", "reward", "error_type", "prompt")
        ),
        empty="No failed rows."
        if failed
        else "No row matches."
        if below_threshold or bounds or tool_errors
        else "No finished rows yet.",
    )


def _selected_rows(
    data: RunData,
    failed: bool,
    below_threshold: bool,
    bounds: tuple[float, float] | None,
    tool_errors: bool,
) -> list[RowRecord]:
    """The rows ``eval show``'s filters keep, in run order."""
    threshold = data.header.pass_threshold
    return [
        r
        for r in data.rows
        if (not failed or r.status == "failed")
        and (not below_threshold or (r.reward is not None and r.reward < threshold))
        and (bounds is None or (r.reward is not None and bounds[0] <= r.reward <= bounds[1]))
        and (not tool_errors or r.tool_errors)
    ]


def _reward_bounds(text: str | None) -> tuple[float, float] | None:
    """``LOW:HIGH`` (either side may be empty) as bounds; a usage error when malformed."""
    import math

    if text is None:
        return None
    low, sep, high = text.partition(":")
    try:
        bounds = (
            float(low) if low.strip() else -math.inf,
            float(high) if high.strip() else math.inf,
        )
    except ValueError:
        bounds = None
    if not sep or bounds is None or bounds[0] > bounds[1]:
        raise typer.BadParameter(
            f"expected LOW:HIGH with LOW <= HIGH (e.g. 0:0.5 or :0.5), got {text!r}",
            param_hint="--reward-range",
        )
    return bounds


# ---- eval compare ----------------------------------------------------------------------------


def _comparison_detail(comparison: RunComparison) -> dict[str, Any]:
    pairs = [p.as_dict() for p in comparison.pairs]
    return {
        **comparison.summary(),
        "flipped_rows": [p for p in pairs if p["change"] in ("regressed", "improved")],
        "status_changed_rows": [p for p in pairs if p["change"] == "status_changed"],
        "only_in_a": [
            [p["source_row_index"], p["run_index"]] for p in pairs if p["change"] == "only_a"
        ],
        "only_in_b": [
            [p["source_row_index"], p["run_index"]] for p in pairs if p["change"] == "only_b"
        ],
        "rows": pairs,
    }


def compare(
    run_a: Annotated[str, typer.Argument(help="Baseline run (name or folder).")],
    run_b: Annotated[str, typer.Argument(help="Run compared with it (name or folder).")],
    runs_dir: RunsDirOption = None,
) -> None:
    """Compare two local runs row by row: flips, reward deltas, paired-bootstrap 95% CI.

    Warns when the runs differ in how they were made: package versions, model, sampling
    parameters, seeds, system fingerprints, dataset digest, rollout code digest, or (Harbor
    rollouts) the task and image digests of a task both runs used.
    """
    from osmosis_ai.eval.report import compare_runs
    from osmosis_cli.output import Column, get_output

    out = get_output()
    comparison = compare_runs(_load(run_a, runs_dir), _load(run_b, runs_dir))
    detail = _comparison_detail(comparison)
    for difference in detail["reproducibility_differences"]:
        out.warn("RUNS_DIFFER", f"the runs were not made the same way: {difference}")
    if out.is_json:
        out.emit_detail(detail)
        return
    interval = comparison.mean_difference
    summary = {
        "runs": f"A = {detail['run_a']}, B = {detail['run_b']}",
        **(
            {
                "regrade": f"{detail['regraded_from']['run']} regraded with "
                f"{detail['regraded_from']['grader']} (same samples, no policy call)"
            }
            if detail.get("regraded_from")
            else {}
        ),
        "mean difference (B - A)": "-"
        if interval is None
        else f"{interval.estimate:+.4f}  95% paired-bootstrap CI [{interval.low:+.4f}, "
        f"{interval.high:+.4f}] over {interval.n} rows graded in both",
        "cost difference (B - A)": "-"
        if comparison.cost_difference_usd is None
        else f"{comparison.cost_difference_usd:+.4f} USD",
        **{
            f"{key} difference (B - A)": f"{i.estimate:+.4f}  95% CI [{i.low:+.4f}, {i.high:+.4f}]"
            for key, i in comparison.metric_differences.items()
        },
        "regressed (pass -> fail)": detail["regressed"],
        "improved (fail -> pass)": detail["improved"],
        "status changed (graded <-> failed/skipped)": detail["status_changed"],
        "only in A / only in B": f"{detail['only_a']} / {detail['only_b']}",
    }
    out.emit_detail(summary, title="eval compare")
    changed = detail["flipped_rows"] + detail["status_changed_rows"]
    out.emit_list(
        changed,
        columns=[
            Column("source_row_index", "source row"),
            Column("run_index", "sample"),
            Column("change", "change"),
            Column("outcome_a", "A"),
            Column("outcome_b", "B"),
            Column("reward_a", "reward A"),
            Column("reward_b", "reward B"),
            Column("delta", "delta"),
            Column("label", "label"),
            Column("answer_a", "answer A"),
            Column("answer_b", "answer B"),
        ],
        plain=lambda p: "\t".join(
            _fmt(p.get(k)) for k in ("source_row_index", "run_index", "change", "delta")
        ),
        empty="No row flipped or changed status.",
    )
