"""``osmosis train submit | list | status``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from osmosis_cli.cli_app import new_typer

app = new_typer("train", help="Submit and follow training runs on the platform.")


@app.command("submit")
def submit_command(
    config: Annotated[Path, typer.Argument(help="configs/training/<name>.toml")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Submit without asking.")] = False,
    secrets_file: Annotated[
        str | None,
        typer.Option("--secrets-file", help="NAME=value lines with secret values ('-': stdin)."),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="Name of the run.")] = None,
) -> None:
    """Start a training run on the platform (preflight, secrets, summary, confirm, submit)."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.runs import SubmitOptions, submit

    submit(
        SubmitOptions(config, "training", yes=yes, secrets_file=secrets_file, name=name),
        get_output(),
    )


@app.command("list")
def list_command(
    limit: Annotated[int, typer.Option("--limit", min=1, max=200)] = 50,
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
) -> None:
    """List training runs submitted to the platform."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.runs import list_runs

    list_runs("training", get_output(), limit=limit, offset=offset)


@app.command("status")
def status_command(run: Annotated[str, typer.Argument(help="Run id or name.")]) -> None:
    """Show one training run submitted to the platform."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.runs import show_run

    show_run("training", run, get_output())
