"""``osmosis quickstart [-w NAME]`` (see :mod:`osmosis_cli.platform.quickstart`)."""

from __future__ import annotations

from typing import Annotated

import typer

from osmosis_cli.cli_app import new_typer

app = new_typer("quickstart")


@app.command("quickstart")
def quickstart_command(
    workspace: Annotated[
        str | None,
        typer.Option("--workspace", "-w", help="Workspace to set up (default: this clone's)."),
    ] = None,
) -> None:
    """Interactive setup: sign in, clone your workspace repository, get a first agent prompt."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.quickstart import run_quickstart

    run_quickstart(get_output(), workspace=workspace)
