"""``osmosis eval``: local runs (``eval run``, owned by the local-eval module) and platform
submissions (``eval submit``, ``eval list``, ``eval status``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from osmosis_cli.cli_app import LazyCommand, new_typer

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
except ImportError:  # pragma: no cover - find_spec on a broken package
    pass


@app.command("submit")
def submit_command(
    config: Annotated[Path, typer.Argument(help="configs/eval/<name>.toml")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Submit without asking.")] = False,
    secrets_file: Annotated[
        str | None,
        typer.Option("--secrets-file", help="NAME=value lines with secret values ('-': stdin)."),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="Name of the run.")] = None,
) -> None:
    """Run an eval on the platform (preflight, secrets, summary, confirm, submit)."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.runs import SubmitOptions, submit

    submit(
        SubmitOptions(config, "eval", yes=yes, secrets_file=secrets_file, name=name), get_output()
    )


@app.command("list")
def list_command(
    limit: Annotated[int, typer.Option("--limit", min=1, max=200)] = 50,
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
) -> None:
    """List eval runs submitted to the platform."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.runs import list_runs

    list_runs("eval", get_output(), limit=limit, offset=offset)


@app.command("status")
def status_command(run: Annotated[str, typer.Argument(help="Run id or name.")]) -> None:
    """Show one eval run submitted to the platform."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.runs import show_run

    show_run("eval", run, get_output())
