"""``osmosis rollout init | validate | serve | deploy | export-harbor | list``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from osmosis_cli.cli_app import new_typer
from osmosis_cli.commands.options import AllPages, PageLimit, PageOffset

app = new_typer("rollout", help="Scaffold, validate, serve and list rollouts.")


@app.command("init")
def init_command(
    name: Annotated[str, typer.Argument(help="Rollout name: lower-case letters, digits, '-'.")],
    force: Annotated[
        bool, typer.Option("--force", "-f", help="Replace an existing rollout and its configs.")
    ] = False,
) -> None:
    """Create rollouts/NAME/ with a workflow and a grader to fill in, plus its configs."""
    from osmosis_cli.output import get_output
    from osmosis_cli.scaffolding.rollout_init import init_rollout, validate_rollout_name
    from osmosis_cli.workspace import require_workspace

    validate_rollout_name(name)
    workspace = require_workspace()
    scaffold = init_rollout(name, workspace, force=force)
    get_output().emit_operation(
        "rollout.init",
        message=f"Created rollout '{name}' in {workspace}.",
        resource=scaffold.resource(),
        lines=scaffold.result.written,
        next_steps=scaffold.next_steps(),
    )


@app.command("validate")
def validate_command(
    target: Annotated[
        str,
        typer.Argument(
            metavar="CONFIG_OR_PATH",
            help="configs/eval/<name>.toml, configs/training/<name>.toml, rollouts/<name> "
            "or rollouts/<name>/main.py.",
        ),
    ],
    timeout: Annotated[
        float, typer.Option("--timeout", min=1, help="Seconds allowed for the import check.")
    ] = 60.0,
) -> None:
    """Check a rollout before running or submitting it (config, dataset, paths, dependencies, import).

    The entrypoint is imported once in a child process; its `__main__` block does not run. A
    module it imports that is not installed here fails the check (exit 1); a local dataset
    whose rows carry no label is a warning. The import check names the mode it found: module
    mode (`app = create_rollout_server(...)` at module level) or script mode (0.3.x style:
    `main()` builds the app and calls `uvicorn.run`; it is run with `uvicorn.run` captured, so
    the app is served where serve/eval bind it). A rollout pinned to the 0.3 SDK
    (`osmosis-ai...<0.4`) gets the exact pyproject.toml edit (`osmosis doctor --fix` applies it).
    """
    from osmosis_cli.output import get_output
    from osmosis_cli.preflight import resolve_target, run_preflight

    output = get_output()
    report = run_preflight(resolve_target(target), timeout_sec=timeout, local=True)
    label = f"{report.rollout}/{report.entrypoint}"
    report.enforce(
        output, on_failure=None if output.is_json else lambda: _print_checks(report.checks)
    )
    lines = [
        f"{_mark(c.status)} {c.name}: {c.message}" for c in report.checks if c.status != "warning"
    ]
    output.emit_operation(
        "rollout.validate",
        message=f"`{label}` passed the preflight"
        + (f" with {len(report.warnings)} warning(s)." if report.warnings else "."),
        resource=report.as_dict(),
        lines=lines,
    )


def _mark(status: str) -> str:
    return {"ok": "ok  ", "warning": "warn", "error": "FAIL", "skipped": "skip"}.get(status, status)


def _print_checks(checks: list) -> None:
    import sys

    for check in checks:
        sys.stderr.write(f"  {_mark(check.status)} {check.name}: {check.message}\n")


@app.command("serve")
def serve_command(
    entrypoint: Annotated[
        str,
        typer.Argument(
            help="rollouts/<name>/main.py (or the folder); append ':attr' if the app is not `app`."
        ),
    ],
    host: Annotated[
        str, typer.Option("--host", help="Interface to bind (127.0.0.1: this machine only).")
    ] = "127.0.0.1",
    port: Annotated[
        int | None,
        typer.Option(
            "--port", min=0, max=65535, help="Port (default: $_OSMOSIS_ROLLOUT_PORT, else 8000)."
        ),
    ] = None,
    reload: Annotated[
        bool, typer.Option("--reload", help="Restart when files in the rollout folder change.")
    ] = False,
    workers: Annotated[
        str | None,
        typer.Option(
            "--workers",
            help="Run rollouts in N worker processes ('auto': usable cores, max 8; "
            "default: $OSMOSIS_ROLLOUT_WORKERS, else 1, in the server process).",
        ),
    ] = None,
) -> None:
    """Serve a rollout's `app` (from create_rollout_server) with uvicorn.

    A 0.3.x-style entrypoint without a module-level `app` (its `main()` builds one and calls
    `uvicorn.run`) is served too: `main()` runs with `uvicorn.run` captured, and the app is bound
    to --host/--port, not to the host and port the script names.
    """
    from osmosis_cli.serving import serve_rollout

    serve_rollout(entrypoint, host=host, port=port, reload=reload, workers=workers)


@app.command("deploy")
def deploy_command(
    target: Annotated[
        str, typer.Argument(metavar="ROLLOUT", help="rollouts/<name> (or its entrypoint file).")
    ],
    nodes: Annotated[
        int, typer.Option("--nodes", min=1, help="Rollout servers (one cloud node each).")
    ] = 1,
    workers: Annotated[
        str, typer.Option("--workers", help="Worker processes per server: N or 'auto'.")
    ] = "auto",
    port: Annotated[int, typer.Option("--port", help="Port each server listens on.")] = 8000,
    cpus: Annotated[str, typer.Option("--cpus", help="vCPUs per node (SkyPilot, e.g. 8+).")] = "4+",
    memory: Annotated[
        str | None, typer.Option("--memory", help="Memory per node in GB (e.g. 32+).")
    ] = None,
    infra: Annotated[
        str | None, typer.Option("--infra", help="SkyPilot infra, e.g. aws, gcp/us-central1.")
    ] = None,
    use_spot: Annotated[bool, typer.Option("--use-spot", help="Use spot instances.")] = False,
    secret: Annotated[
        list[str] | None,
        typer.Option(
            "--secret",
            metavar="NAME",
            help="Extra environment variable passed as a SkyPilot secret (name only; the "
            "value is read from your shell at launch). OSMOSIS_ROLLOUT_API_KEY always is.",
        ),
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="Cluster name prefix (default osmosis-<rollout>).")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the task; write nothing, no cloud access.")
    ] = False,
    launch: Annotated[
        bool, typer.Option("--launch", help="Launch it with `sky` and write the servers file.")
    ] = False,
    down: Annotated[
        bool, typer.Option("--down", help="Tear down the clusters of this deployment.")
    ] = False,
) -> None:
    """A SkyPilot fleet of rollout servers: write the task, launch it, or tear it down.

    Writes .osmosis/deploy/<name>/task.yaml (one `osmosis rollout serve` per cluster,
    dependencies from the rollout's pyproject.toml, a /health readiness check, secrets by name
    only). --launch runs `sky launch` per node and writes servers.txt for
    `osmosis eval run --servers-file`. See docs/operations.md (running at scale).
    """
    from osmosis_cli.deploy.command import DeployRequest, deploy

    deploy(
        DeployRequest(
            target=target,
            name=name,
            nodes=nodes,
            workers=workers,
            port=port,
            cpus=cpus,
            memory=memory,
            infra=infra,
            use_spot=use_spot,
            secrets=secret or [],
            dry_run=dry_run,
            launch=launch,
            down=down,
        )
    )


@app.command("export-harbor")
def export_harbor_command(
    target: Annotated[
        str, typer.Argument(metavar="ROLLOUT", help="rollouts/<name> (or its entrypoint file).")
    ],
    dataset: Annotated[
        Path, typer.Option("--dataset", "-d", help="Dataset file (JSONL, CSV or Parquet).")
    ],
    out_dir: Annotated[
        Path, typer.Option("--output", "-o", help="New or empty directory for the task folders.")
    ],
    solution: Annotated[
        str | None,
        typer.Option(
            "--solution",
            help="Reference answer template for solution/solve.sh, e.g. '#### {label}' "
            "({label} and the row's metadata keys).",
        ),
    ] = None,
    image: Annotated[
        str | None, typer.Option("--image", help="Base image (default python:3.12-slim).")
    ] = None,
    bake_dependencies: Annotated[
        bool,
        typer.Option(
            "--bake-dependencies/--no-bake-dependencies",
            help="Install the rollout's dependencies in the image (else at verification).",
        ),
    ] = True,
    name: Annotated[
        str | None, typer.Option("--name", help="Task name prefix (default: the rollout's name).")
    ] = None,
) -> None:
    """Write a rollout + dataset as Harbor tasks: one folder per row, the grader as verifier.

    Each task has the row's prompt as instruction.md, a Python image, and tests/test.sh running
    the rollout's Grader on the agent's answer (Harbor's reward.json). Run them with any Harbor
    agent (`harbor run -p DIR`); --solution adds a reference answer for the oracle agent.
    """
    from osmosis_cli.harbor_export import ExportRequest, export_harbor
    from osmosis_cli.output import get_output

    tasks = export_harbor(
        ExportRequest(
            target=target,
            dataset=dataset,
            out_dir=out_dir,
            solution=solution,
            image=image,
            bake_dependencies=bake_dependencies,
            name=name,
        )
    )
    get_output().emit_operation(
        "rollout.export-harbor",
        message=f"Wrote {len(tasks)} Harbor task(s) to {out_dir}.",
        resource={"output": str(out_dir), "tasks": [p.name for p in tasks]},
        lines=[str(p) for p in tasks[:20]]
        + ([f"... {len(tasks) - 20} more"] if len(tasks) > 20 else []),
    )


@app.command("list")
def list_command(
    branch: Annotated[
        str | None, typer.Option("--branch", help="Only rollouts synced from this branch.")
    ] = None,
    limit: PageLimit = 50,
    offset: PageOffset = 0,
    all_pages: AllPages = False,
) -> None:
    """List the rollouts the platform has synced from the workspace repository."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.rollouts import list_rollouts

    list_rollouts(get_output(), branch=branch, limit=limit, offset=offset, all_pages=all_pages)
