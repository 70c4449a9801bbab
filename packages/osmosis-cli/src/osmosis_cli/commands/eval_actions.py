"""From a local run to training decisions: ``osmosis eval regrade``, ``osmosis eval export``
and ``osmosis dataset curate`` (thin shells over :mod:`osmosis_ai.eval`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from osmosis_cli.commands.eval_results import RunsDirOption

if TYPE_CHECKING:
    from osmosis_ai.eval import CurationResult, RegradeResult
    from osmosis_cli.output import Output


def regrade(
    run: Annotated[str, typer.Argument(help="The source run (name or folder).", metavar="RUN")],
    name: Annotated[str, typer.Option("--name", help="Name of the new run.", metavar="NEW")],
    grader: Annotated[
        str | None,
        typer.Option(
            "--grader",
            help="The grader: MODULE:CLASS (found in the run's rollout folder, then the "
            "current folder) or path/to/file.py:CLASS. Default: the run's rollout's own.",
            metavar="MODULE:CLASS",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="Use the grader of the rollout this eval config names."),
    ] = None,
    grader_timeout: Annotated[
        float | None,
        typer.Option("--grader-timeout", help="Per-sample grader deadline in seconds."),
    ] = None,
    max_concurrency: Annotated[
        int, typer.Option("--max-concurrency", help="Samples graded at once.", min=1)
    ] = 16,
    no_judge_cache: Annotated[
        bool,
        typer.Option("--no-judge-cache", help="Do not use the on-disk LLM-judge verdict cache."),
    ] = False,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Archive an existing run named NEW first.")
    ] = False,
    runs_dir: RunsDirOption = None,
) -> None:
    """Re-run only the grader on RUN's saved samples into a new run NEW (no policy call).

    Labels and metadata are the ones the rollouts got; LLM-judge verdicts are cached on disk
    (judge model + prompt). Then `osmosis eval compare RUN NEW` shows what the grader change
    flipped. Exit 1 when a sample failed grading. Same from Python:
    osmosis_ai.eval.regrade_run (docs/guides/after-an-eval.md).
    """
    from osmosis_ai.eval import RegradeError, regrade_run
    from osmosis_cli.commands.eval_results import resolve_run
    from osmosis_cli.errors import validation
    from osmosis_cli.output import get_output

    out = get_output()
    if grader is not None and config is not None:
        raise validation("give --grader or --config, not both")
    source = resolve_run(run, runs_dir)
    try:
        result = regrade_run(
            source,
            name=name,
            grader=grader,
            config=config,
            grader_timeout_sec=grader_timeout,
            max_concurrency=max_concurrency,
            judge_cache=not no_judge_cache,
            fresh=fresh,
        )
    except RegradeError as exc:
        raise validation(str(exc)) from None
    failed = _emit_regrade(out, source.name, result)
    if failed:
        raise typer.Exit(code=1)


def _emit_regrade(out: Output, source: str, result: RegradeResult) -> int:
    """Print the regrade's result; returns how many samples failed grading."""
    figures = result.figures
    failed = figures.failed or 0
    out.emit_operation(
        "eval.regrade",
        status="success" if not failed else "partial",
        message=(
            f"Regraded {result.regraded} sample(s) of {source} with {result.grader} into "
            f"{result.run_name}: {result.changed} changed reward or status"
            + (f", {failed} failed grading" if failed else "")
            + "."
        ),
        resource={
            "run_name": result.run_name,
            "output_path": str(result.run_dir),
            "source": str(result.source_dir),
            "grader": result.grader,
            "regraded": result.regraded,
            "copied": result.copied,
            "changed": result.changed,
            "judge_calls": result.judge_calls,
            "judge_cached_calls": result.judge_cached_calls,
            "metrics": result.metrics,
            "duration_ms": round(result.duration_ms, 1),
        },
        lines=[
            f"mean reward: {_num(figures.mean_reward)}  pass rate: {_num(figures.pass_rate)}",
            f"judge calls: {result.judge_calls} ({result.judge_cached_calls} from the cache)",
            f"results: {result.run_dir}",
        ],
        next_steps=[f"osmosis eval compare {source} {result.run_name}"],
    )
    return failed


def export(
    run: Annotated[str, typer.Argument(help="The run (name or folder).", metavar="RUN")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="sharegpt, openai-messages or atif (Harbor's trajectory format).",
            metavar="FORMAT",
        ),
    ] = "openai-messages",
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write here (default: standard output)."),
    ] = None,
    status: Annotated[
        list[str] | None,
        typer.Option(
            "--status", help="Only samples of this status (success, failed, skipped); repeat."
        ),
    ] = None,
    min_reward: Annotated[
        float | None, typer.Option("--min-reward", help="Only samples rewarded at least this.")
    ] = None,
    max_reward: Annotated[
        float | None, typer.Option("--max-reward", help="Only samples rewarded at most this.")
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an existing --output file.")
    ] = False,
    runs_dir: RunsDirOption = None,
) -> None:
    """Export RUN's transcripts for SFT or another trainer: one JSON line per sample.

    Each line holds the messages, the tool definitions the policy was offered, the reward,
    the grader's metrics and the sample's keys (run, row, sample, rollout id, label).
    Read a file back with osmosis_ai.eval.read_export.
    """
    import sys

    from osmosis_ai.eval import ExportError, ExportFilter, write_export
    from osmosis_cli.commands.eval_results import resolve_run
    from osmosis_cli.errors import validation
    from osmosis_cli.output import get_output

    out = get_output()
    formats = ("sharegpt", "openai-messages", "atif")
    if fmt not in formats:
        raise validation(f"--format {fmt!r} is not one of {', '.join(formats)}")
    source = resolve_run(run, runs_dir)
    try:
        selection = ExportFilter.of(
            [s for item in status or [] for s in item.split(",")], min_reward, max_reward
        )
    except ExportError as exc:
        raise validation(str(exc)) from None
    if output is None:
        count = write_export(source, sys.stdout, fmt, selection)  # type: ignore[arg-type]
        sys.stdout.flush()
        out.warn("EXPORTED", f"{count} sample(s) of {source.name} exported as {fmt}")
        return
    if output.exists() and not overwrite:
        raise validation(f"{output} exists; pass --overwrite to replace it")
    import io

    from osmosis_ai.atomic_file import write_atomic

    buffer = io.StringIO()
    count = write_export(source, buffer, fmt, selection)  # type: ignore[arg-type]
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(output, buffer.getvalue())
    out.emit_operation(
        "eval.export",
        message=f"Exported {count} sample(s) of {source.name} as {fmt} to {output}.",
        resource={"run": source.name, "format": fmt, "samples": count, "path": str(output)},
    )


def curate(
    run: Annotated[str, typer.Argument(help="The eval run (name or folder).", metavar="RUN")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="The curated dataset (.jsonl) to write.")
    ],
    band: Annotated[
        str,
        typer.Option(
            "--band", help="Keep rows whose pass rate is in LOW:HIGH.", metavar="LOW:HIGH"
        ),
    ] = "0.1:0.9",
    min_n: Annotated[
        int, typer.Option("--min-n", help="Drop rows with fewer graded samples.", min=1)
    ] = 1,
    holdout: Annotated[
        Path | None,
        typer.Option(
            "--holdout",
            help="Also split off a held-out set here (the platform's rule: 20 %, rounded "
            "down, at most 10,000 rows).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the held-out choice.")] = 0,
    group_size: Annotated[
        int | None,
        typer.Option(
            "--group-size", help="GRPO group size at training (default: the run's n).", min=1
        ),
    ] = None,
    prompts_per_step: Annotated[
        int,
        typer.Option("--prompts-per-step", help="Prompts per training step, for its cost.", min=1),
    ] = 1,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace existing output files.")
    ] = False,
    runs_dir: RunsDirOption = None,
) -> None:
    """Keep the rows of RUN whose pass rate is in --band (GRPO learns only from groups whose
    samples disagree), drop duplicates, write them as JSONL ready for 'dataset upload' with a
    provenance sidecar (<output>.provenance.json); print the share of groups carrying signal
    before and after, and the expected rollout cost per training step."""
    from osmosis_ai.eval import CurateOptions, CurationError, curate_run, parse_band
    from osmosis_cli.commands.eval_results import resolve_run
    from osmosis_cli.errors import validation
    from osmosis_cli.output import get_output

    out = get_output()
    source = resolve_run(run, runs_dir)
    for path in (output, holdout):
        if path is not None and path.exists() and not overwrite:
            raise validation(f"{path} exists; pass --overwrite to replace it")
    try:
        result = curate_run(
            source,
            output,
            CurateOptions(
                band=parse_band(band),
                min_n=min_n,
                holdout=holdout,
                seed=seed,
                group_size=group_size,
                prompts_per_step=prompts_per_step,
            ),
        )
    except CurationError as exc:
        raise validation(str(exc)) from None
    _emit_curation(out, source.name, output, result)


def _emit_curation(out: Output, source: str, output: Path, result: CurationResult) -> None:
    """Print what the curation kept and its figures. Too few rows for the platform's
    dataset rule: a warning instead of the upload suggestion (the file is still written and
    the exit code stays 0, as for an eval in which nothing passed: the command did its job,
    its outcome is not usable as is)."""
    from osmosis_cli.platform.datasets import MIN_ROWS

    uploadable = result.kept >= MIN_ROWS
    if not uploadable:
        out.warn(
            "TOO_FEW_ROWS",
            f"kept {result.kept} row(s) in {output}; the platform needs at least {MIN_ROWS} "
            f"rows per dataset, so 'osmosis dataset upload' would refuse it. Widen --band, "
            f"lower --min-n or eval more rows (then curate again).",
            kept=result.kept,
            min_rows=MIN_ROWS,
            path=str(output),
        )
    decisions: dict[str, int] = {}
    for row in result.rows:
        decisions[row.decision] = decisions.get(row.decision, 0) + 1
    cost = result.cost_per_step_usd
    out.emit_operation(
        "dataset.curate",
        message=f"Kept {result.kept} of {len(result.rows)} row(s) of {source} in {output}.",
        resource={
            "run": source,
            "path": str(output),
            "provenance_path": str(result.provenance),
            "holdout_path": str(result.holdout) if result.holdout else None,
            "decisions": decisions,
            **result.figures,
        },
        lines=[
            "rows: " + ", ".join(f"{k} {v}" for k, v in sorted(decisions.items())),
            f"groups carrying signal: {_pct(result.signal_share_before)} before, "
            f"{_pct(result.signal_share_after)} after (rows with >= 2 graded samples)",
            f"expected at group size {result.group_size}: "
            f"{_pct(result.expected_signal_share_before)} before, "
            f"{_pct(result.expected_signal_share_after)} after",
            f"rollout cost per training step ({result.prompts_per_step} prompt(s) x "
            f"{result.group_size} samples): "
            + ("not priced (the run has no cost data)" if cost is None else f"${cost:.4f}"),
            f"the platform will hold out {result.platform_holdout} row(s) of {output.name} for "
            f"validation and train on {result.platform_train}",
            f"provenance: {result.provenance}",
        ],
        next_steps=[f"osmosis dataset upload {output}"] if uploadable else [],
        ok=uploadable,
    )


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:.4f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"
