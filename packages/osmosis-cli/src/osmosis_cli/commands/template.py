"""``osmosis template list`` / ``osmosis template apply NAME``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from osmosis_cli.cli_app import new_typer

app = new_typer("template", help="List and apply rollout templates (shipped with the CLI).")


@app.command("list")
def list_command() -> None:
    """List the templates that `osmosis template apply` can write."""
    from osmosis_cli.output import Column, get_output
    from osmosis_cli.scaffolding.catalog import list_templates

    items = [t.summary() for t in list_templates()]
    get_output().emit_list(
        items,
        columns=[
            Column("name", "Template"),
            Column("backend", "Backend"),
            Column("framework", "Framework"),
            Column("description", "Description"),
        ],
        plain=lambda item: str(item["name"]),
        title="Templates",
    )


@app.command("apply")
def apply_command(
    name: Annotated[str, typer.Argument(help="Template name (see `osmosis template list`).")],
    force: Annotated[
        bool,
        typer.Option("--force", "-f", help="Replace files and the rollout folder that exist."),
    ] = False,
    directory: Annotated[
        Path | None,
        typer.Option("--dir", help="Workspace to write into (default: the current workspace)."),
    ] = None,
) -> None:
    """Write a template's rollout, eval and training configs, and dataset into the workspace."""
    from osmosis_cli.output import get_output
    from osmosis_cli.scaffolding.apply import apply_template
    from osmosis_cli.scaffolding.catalog import get_template
    from osmosis_cli.workspace import require_workspace

    template = get_template(name)
    workspace = require_workspace(directory)
    applied = apply_template(template, workspace, force=force)
    written = len(applied.result.written)
    get_output().emit_operation(
        "template.apply",
        message=f"Applied template '{name}' to {workspace} ({written} file(s) written).",
        resource={**applied.resource(), "workspace_directory": str(workspace)},
        lines=applied.destinations,
        next_steps=applied.next_steps(),
    )
