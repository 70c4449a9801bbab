"""``osmosis doctor [PATH] [--fix]``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from osmosis_cli.cli_app import new_typer

app = new_typer("doctor")


@app.command("doctor")
def doctor_command(
    path: Annotated[Path, typer.Argument(help="A folder inside the workspace.")] = Path("."),
    fix: Annotated[
        bool,
        typer.Option(
            "--fix",
            help="Create missing workspace folders and agent files; update unedited agent "
            "skills (`osmosis skills update`); move rollouts pinned to the 0.3 SDK "
            "(osmosis-ai<0.4) to this one.",
        ),
    ] = False,
) -> None:
    """Check the workspace layout, configs, Python, uv and installed integrations."""
    from osmosis_cli.doctor import check_environment, check_workspace, fix_sdk_pins
    from osmosis_cli.errors import CLIError, CLIErrorCode
    from osmosis_cli.output import Column, get_output
    from osmosis_cli.workspace import missing_dirs

    output = get_output()
    root, checks = check_workspace(path, fix=fix)
    if fix and root is not None:
        from osmosis_cli.scaffolding.skills import update_skills
        from osmosis_cli.scaffolding.workspace_init import init_workspace

        added = init_workspace(root, git=False).created
        skills = update_skills(root)
        added += skills.added
        changed = fix_sdk_pins(root) + [f"updated {p}" for p in skills.updated]
        checks = check_workspace(path, fix=False)[1]
        if added:
            output.progress(f"Added: {', '.join(added)}")
        if changed:
            output.progress(f"Changed: {'; '.join(changed)}")
    checks += check_environment()
    rows = [c.as_dict() for c in checks]
    errors = [c for c in checks if c.status == "error"]
    if not output.is_json:
        output.emit_list(
            rows,
            columns=[
                Column("status", ""),
                Column("name", "Check"),
                Column("message", "Result"),
                Column("fix", "Fix"),
            ],
            plain=lambda r: (
                f"{r['status']}\t{r['name']}\t{r['message']}"
                + (f"\tfix: {r['fix']}" if r["fix"] else "")
            ),
            title="osmosis doctor",
        )
    if errors:
        missing = missing_dirs(root) if root is not None else []
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"{len(errors)} problem(s): "
            + "; ".join(
                f"{c.name}: {c.message}" + (f" (fix: {c.fix})" if c.fix else "") for c in errors
            ),
            details={"checks": rows, "missing": missing, "workspace": str(root) if root else None},
        )
    warnings = sum(c.status == "warning" for c in checks)
    if output.is_json:
        output.emit_operation(
            "doctor",
            message=f"All checks passed ({warnings} warning(s)).",
            resource={"workspace_directory": str(root) if root else None, "checks": rows},
        )
    else:
        output.emit_message(f"All checks passed ({warnings} warning(s)).")
