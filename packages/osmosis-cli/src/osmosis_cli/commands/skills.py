"""``osmosis skills list`` / ``osmosis skills update``: the workspace's Agent Skills."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from osmosis_cli.cli_app import new_typer

app = new_typer(
    "skills",
    help="List the workspace's Agent Skills and update them without losing local edits.",
)

PathArg = Annotated[Path, typer.Argument(help="A folder inside the workspace.")]


@app.command("list")
def list_command(path: PathArg = Path(".")) -> None:
    """List the skills this CLI ships and their state in the workspace.

    Status: current, outdated (unedited, a newer version ships), locally-edited (a file differs
    from what osmosis wrote), missing (installed, then deleted) or new-available.
    """
    from osmosis_cli.output import Column, get_output
    from osmosis_cli.scaffolding.skills import skill_states
    from osmosis_cli.workspace import require_workspace

    root = require_workspace(path)
    items = [state.as_dict() for state in skill_states(root)]
    get_output().emit_list(
        items,
        columns=[
            Column("name", "Skill"),
            Column("status", "Status"),
            Column("description", "Description"),
        ],
        plain=lambda item: f"{item['name']}\t{item['status']}",
        title="Agent skills (.agents/skills)",
        empty="No skills.",
    )


@app.command("update")
def update_command(
    path: PathArg = Path("."),
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print what would change; write nothing.")
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            "-f",
            help="Also replace locally edited files (each is saved next to it as <file>.orig).",
        ),
    ] = False,
) -> None:
    """Add new skills and replace unedited outdated files; keep locally edited ones.

    A file is unedited when its sha256 matches the manifest (.agents/skills/.osmosis-skills.json)
    or any version an osmosis CLI shipped; see docs/skills.md.
    """
    from osmosis_cli.output import get_output
    from osmosis_cli.scaffolding.skills import update_skills
    from osmosis_cli.workspace import require_workspace

    root = require_workspace(path)
    change = update_skills(root, force=force, dry_run=dry_run)
    lines = [f"added {p}" for p in change.added]
    lines += [f"updated {p}" for p in change.updated]
    lines += [f"replaced {p} (yours saved as {p}.orig)" for p in change.replaced_edited]
    lines += [f"kept (locally edited) {p}" for p in change.kept_edited]
    verb = "Would change" if dry_run else "Changed"
    count = len(change.added) + len(change.updated) + len(change.replaced_edited)
    message = f"{verb} {count} file(s)" if count else "Skills are up to date"
    if change.kept_edited:
        message += f"; kept {len(change.kept_edited)} locally edited file(s)"
    get_output().emit_operation(
        "skills.update",
        message=message + ".",
        resource={"workspace_directory": str(root), **change.resource()},
        lines=lines,
        next_steps=["osmosis skills update --force"] if change.kept_edited and not force else [],
    )
