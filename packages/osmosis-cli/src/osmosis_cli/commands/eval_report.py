"""``osmosis eval report`` (a local run's HTML report) and the end of ``osmosis eval run``.

Thin shells over :mod:`osmosis_ai.eval.report`, like :mod:`osmosis_cli.commands.eval_results`
(which resolves the run): write ``report.html`` with the run's secrets redacted, and the failure
lines ``eval run`` prints when it finishes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from osmosis_cli.commands.eval_results import RunsDirOption, resolve_run

if TYPE_CHECKING:
    from osmosis_ai.eval.report import RunData


# ---- eval report -----------------------------------------------------------------------------


def secret_redactor(run_dir: Path) -> Any:
    """Redacts what the run's ``logs.txt`` redacts: the current values of the secrets the run
    declared (by name), its upstream API key, URL credentials (one rule, in core)."""
    from osmosis_ai.eval.report import run_redactor

    return run_redactor(run_dir)


def report(
    run: Annotated[
        str | None,
        typer.Argument(help="Run name (see `osmosis eval list`) or run folder (not with --all)."),
    ] = None,
    all_runs: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Write <runs folder>/index.html over every local run (and each run's missing "
            "or outdated report.html) instead of one run's report.",
        ),
    ] = False,
    compare_with: Annotated[
        str | None,
        typer.Option("--compare", help="A baseline run to compare with (name or folder)."),
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Where to write (default: <run folder>/report.html)."),
    ] = None,
    runs_dir: RunsDirOption = None,
) -> None:
    """Write one self-contained HTML report of a local run (opens from file://, no network)."""
    from osmosis_ai.eval.report import REPORT_FILE, load_run, write_report
    from osmosis_cli.errors import CLIError, CLIErrorCode
    from osmosis_cli.output import get_output

    out = get_output()
    if all_runs:
        if run is not None or compare_with is not None or file is not None:
            raise CLIError(
                CLIErrorCode.VALIDATION,
                "--all writes the index of every run: pass no run, --compare or --output with it",
            )
        _report_all(runs_dir)
        return
    if run is None:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            "name a run (see `osmosis eval list`), or pass --all for the index of every run",
        )
    run_dir = resolve_run(run, runs_dir)
    data = load_run(run_dir)
    baseline = load_run(resolve_run(compare_with, runs_dir)) if compare_with else None
    target = file or run_dir / REPORT_FILE
    write_report(data, target, compare_with=baseline, redact=secret_redactor(run_dir))
    out.emit_operation(
        "eval.report",
        message=f"Report written: {target}",
        resource={
            "path": str(target),
            "bytes": target.stat().st_size,
            "run": data.header.name,
            "compare_with": baseline.header.name if baseline else None,
        },
        lines=[f"open it in a browser: file://{target.resolve()}"],
    )


def _report_all(runs_dir: Path | None) -> None:
    """``eval report --all``: each run's report when missing or older than its results, then
    the index page over every run."""
    from osmosis_ai.eval.report import (
        REPORT_FILE,
        find_runs,
        load_run,
        write_report,
        write_runs_index,
    )
    from osmosis_cli.commands.eval_results import runs_root
    from osmosis_cli.output import get_output

    out = get_output()
    root = runs_root(runs_dir)
    headers = find_runs(root)
    written: list[str] = []
    for header in headers:
        target = header.path / REPORT_FILE
        results = header.path / "metrics.json"
        stale = not target.is_file() or (
            results.is_file() and results.stat().st_mtime > target.stat().st_mtime
        )
        if stale and header.status != "running":
            write_report(load_run(header.path), target, redact=secret_redactor(header.path))
            written.append(header.name)
    root.mkdir(parents=True, exist_ok=True)
    index = write_runs_index(headers, root)
    out.emit_operation(
        "eval.report",
        message=f"Index of {len(headers)} local runs written: {index}",
        resource={"path": str(index), "runs": len(headers), "reports_written": written},
        lines=[f"open it in a browser: file://{index.resolve()}"],
    )


# ---- the end of `eval run` -------------------------------------------------------------------

_GROUPS_SHOWN = 10


def failure_lines(data: RunData) -> list[str]:
    """Failures grouped by type, message and code location; the first one's traceback in full."""
    from osmosis_ai.eval.report import group_failures

    groups = group_failures(data.rows)
    if not groups:
        return []
    lines = ["failures:", *(f"  {g.describe()}" for g in groups[:_GROUPS_SHOWN])]
    if len(groups) > _GROUPS_SHOWN:
        lines.append(
            f"  ... and {len(groups) - _GROUPS_SHOWN} more kinds (osmosis eval show --failed)"
        )
    first = groups[0].first
    lines.append(
        f"first failure: row {first.row_index} sample {first.run_index} "
        f"(source row {first.source_row_index}), {first.error_type}: {first.error_message or '-'}"
    )
    if first.traceback:
        lines.extend(f"  {line}" for line in first.traceback.rstrip().splitlines())
    return lines


def finish_run(run_dir: Path, *, write: bool) -> tuple[Path | None, list[str]]:
    """After ``eval run``: write ``report.html`` (unless ``write`` is false) and return its path
    with the failure lines for the console. Never fails the run: a problem becomes a line."""
    from osmosis_ai.errors import EvalError
    from osmosis_ai.eval.report import REPORT_FILE, load_run, write_report

    try:
        data = load_run(run_dir, transcripts=write)
        report = None
        if write:
            report = write_report(data, run_dir / REPORT_FILE, redact=secret_redactor(run_dir))
    except (OSError, ValueError, EvalError) as exc:
        return None, [f"could not write the report: {type(exc).__name__}: {exc}"]
    return report, failure_lines(data)
