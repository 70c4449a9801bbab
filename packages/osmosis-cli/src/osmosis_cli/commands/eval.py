"""``osmosis eval``: local runs (``eval run``, owned by the local-eval module; reading them:
``list``, ``show``, ``compare``, ``report``, ``status``, see
:mod:`osmosis_cli.commands.eval_results` and :mod:`osmosis_cli.commands.eval_report`) and
platform runs (``submit``, ``list --remote``, ``info``, ``logs``, ``stop``, ``download``: see
:mod:`osmosis_cli.commands.platform_runs`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from osmosis_cli.cli_app import LazyCommand, new_typer
from osmosis_cli.commands.eval_results import RunsDirOption
from osmosis_cli.commands.options import AllPages, PageLimit, PageOffset
from osmosis_cli.commands.platform_runs import platform_run_commands

app = new_typer("eval", help="Evaluate rollouts locally or on the platform.")

# `eval run` lives in its own module (a large command with its own dependencies); it is
# imported only when `eval run` is invoked or `osmosis eval --help` lists it.
LAZY_SUBCOMMANDS: dict[str, LazyCommand] = {}
try:
    from importlib.util import find_spec

    if find_spec("osmosis_cli.commands.eval_run") is not None:
        LAZY_SUBCOMMANDS["run"] = LazyCommand(
            "osmosis_cli.commands.eval_run",
            "run",
            "Run an eval locally against any OpenAI-compatible model.",
        )
    if find_spec("osmosis_cli.commands.eval_rubric") is not None:
        LAZY_SUBCOMMANDS["rubric"] = LazyCommand(
            "osmosis_cli.commands.eval_rubric",
            "rubric",
            "Grade conversations against a rubric with an LLM judge.",
        )
except ImportError:  # pragma: no cover - find_spec on a broken package
    pass
# Reading local runs (osmosis_cli.commands.eval_results and eval_report).
LAZY_SUBCOMMANDS.update(
    {
        name: LazyCommand("osmosis_cli.commands.eval_results", name, help)
        for name, help in (
            ("show", "Summary and rows of a local run, or one row's transcript (--row)."),
            ("compare", "Compare two local runs row by row (flips, deltas, paired CI)."),
        )
    }
)
# After a run: regrade its samples, export its transcripts (osmosis_cli.commands.eval_actions).
LAZY_SUBCOMMANDS.update(
    {
        name: LazyCommand("osmosis_cli.commands.eval_actions", name, help)
        for name, help in (
            ("regrade", "Re-run only the grader on a local run's saved samples (new run)."),
            ("export", "Export a local run's transcripts (sharegpt, openai-messages, atif)."),
        )
    }
)
LAZY_SUBCOMMANDS["report"] = LazyCommand(
    "osmosis_cli.commands.eval_report",
    "report",
    "Write a local run's self-contained HTML report (opens from file://).",
)

# The platform run commands; `list` and `status` also cover local runs (below).
_PLATFORM = {command.name: command for command in platform_run_commands("eval")}
for _command in _PLATFORM.values():
    if _command.name not in ("list", "status"):
        app.command(_command.name, help=_command.help, hidden=_command.hidden)(_command.callback)


@app.command("list")
def list_command(
    limit: PageLimit = 50,
    offset: PageOffset = 0,
    all_pages: AllPages = False,
    remote: Annotated[
        bool, typer.Option("--remote", help="List runs submitted to the platform instead.")
    ] = False,
    runs_dir: RunsDirOption = None,
) -> None:
    """List local eval runs (newest first), or platform runs with --remote (--all: every
    page of them).

    A local run's status is that of its last session (success, partial, interrupted),
    running while an 'eval run' session holds it, and interrupted when its last session
    never finished (killed): rerun with --name to resume it."""
    if remote:
        _PLATFORM["list"].callback(limit=limit, offset=offset, all_pages=all_pages)
        return
    from osmosis_cli.commands.eval_results import list_local
    from osmosis_cli.output import get_output

    list_local(runs_dir, limit, offset, get_output())


@app.command("status")
def status_command(
    run: Annotated[str, typer.Argument(help="Local run name or folder, or platform run id/name.")],
    remote: Annotated[
        bool, typer.Option("--remote", help="Look the run up on the platform only.")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Platform run: write it as JSON to this file."),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an existing --output file.")
    ] = False,
    runs_dir: RunsDirOption = None,
) -> None:
    """Show one eval run: the local run RUN names, else the platform run (as 'eval info')."""
    if not remote:
        from osmosis_cli.commands.eval_results import local_run_dir, status_local
        from osmosis_cli.output import get_output

        local = local_run_dir(run, runs_dir)
        if local is not None:
            status_local(local, get_output())
            return
    _PLATFORM["status"].callback(run=run, out=out, overwrite=overwrite)


@app.command("upload")
def upload_command(
    run: Annotated[str, typer.Argument(help="Local run name or folder.", metavar="NAME_OR_DIR")],
    replace: Annotated[
        bool,
        typer.Option("--replace", help="Replace results this run already imported."),
    ] = False,
    runs_dir: RunsDirOption = None,
) -> None:
    """Upload a finished local run's results to the platform (resumes if interrupted)."""
    from osmosis_cli.commands.eval_results import resolve_run
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.eval_upload import upload_run

    upload_run(resolve_run(run, runs_dir), get_output(), replace=replace)
