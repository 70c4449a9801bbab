"""``osmosis upgrade`` (see :mod:`osmosis_cli.upgrade`)."""

from __future__ import annotations

from typing import Annotated

import typer

from osmosis_cli.cli_app import new_typer

app = new_typer("upgrade")


@app.command("upgrade")
def upgrade_command(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the upgrade command without running it.")
    ] = False,
) -> None:
    """Upgrade osmosis to the newest release, the way it was installed."""
    from osmosis_cli.output import get_output
    from osmosis_cli.upgrade import run_upgrade

    run_upgrade(get_output(), dry_run=dry_run)
