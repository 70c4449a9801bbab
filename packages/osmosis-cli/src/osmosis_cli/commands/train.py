"""``osmosis train submit | list | info | logs | stop`` (see
:mod:`osmosis_cli.commands.platform_runs`)."""

from __future__ import annotations

from osmosis_cli.cli_app import new_typer
from osmosis_cli.commands.platform_runs import register

app = new_typer("train", help="Submit and follow training runs on the platform.")
register(app, "training")
