"""``osmosis init [DIR]``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from osmosis_cli.cli_app import new_typer

app = new_typer("init")


@app.command("init")
def init_command(
    directory: Annotated[
        Path, typer.Argument(help="Folder to turn into a workspace (created if missing).")
    ] = Path("."),
    git: Annotated[
        bool, typer.Option("--git/--no-git", help="Run `git init` if not in a repository.")
    ] = True,
) -> None:
    """Create an osmosis workspace: rollouts/, configs/, data/, README, AGENTS.md and skills.

    The agent skills are written once, to .agents/skills/ (with a manifest of what was
    written); .claude/skills links to them (a copy where symlinks fail). Existing files are
    never overwritten, so it is safe to run in an existing repository; `osmosis skills update`
    refreshes the skills later without losing local edits (docs/skills.md).
    """
    from osmosis_cli.output import get_output
    from osmosis_cli.scaffolding.workspace_init import init_workspace

    result = init_workspace(directory, git=git)
    message = f"Workspace ready at {result.workspace}"
    if result.kept:
        message += f" (kept {len(result.kept)} existing file(s))"
    get_output().emit_operation(
        "init",
        message=message + ".",
        resource=result.resource(),
        lines=result.created,
        next_steps=[
            "osmosis template list",
            "osmosis template apply multiply-local-strands   (or: osmosis rollout init <name>)",
            "osmosis doctor",
        ],
    )
