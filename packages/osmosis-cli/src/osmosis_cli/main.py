"""Entry point of the ``osmosis`` console script."""

from __future__ import annotations

import typer

app = typer.Typer(name="osmosis", no_args_is_help=True, add_completion=False)
eval_app = typer.Typer(
    name="eval", help="Evaluate rollouts locally or on the platform.", no_args_is_help=True
)
app.add_typer(eval_app)


def main() -> None:
    """Run the CLI (console script target)."""
    app()
