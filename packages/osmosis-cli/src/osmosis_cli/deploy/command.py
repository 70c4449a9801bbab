"""``osmosis rollout deploy``: write the SkyPilot task, print it (``--dry-run``), launch it
(``--launch``) or tear it down (``--down``). The typer command in ``commands/rollout.py`` only
collects the flags."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from osmosis_cli.deploy.launch import DeployError, DeployPaths, launch, launch_commands, teardown
from osmosis_cli.deploy.task import (
    DeploySpec,
    DeploySpecError,
    FleetOptions,
    build_task,
    render_yaml,
)
from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import get_output


@dataclass(slots=True, kw_only=True)
class DeployRequest(FleetOptions):
    """The command's flags: the fleet's options, which rollout, and what to do with it."""

    target: str
    name: str | None = None
    dry_run: bool = False
    launch: bool = False
    down: bool = False


def deploy(request: DeployRequest) -> None:
    from osmosis_cli.preflight.target import resolve_target

    out = get_output()
    if request.dry_run and (request.launch or request.down):
        raise CLIError(
            CLIErrorCode.VALIDATION, "--dry-run only prints the task: drop --launch/--down"
        )
    target = resolve_target(request.target)
    workspace = target.workspace or target.rollout_dir.parent
    name = request.name or f"osmosis-{target.rollout_dir.name}".lower().replace("_", "-")
    if request.down:
        _down(workspace, name)
        return
    spec = DeploySpec(
        name=name,
        workspace=workspace,
        rollout_dir=target.rollout_dir,
        entrypoint=target.entrypoint,
        fleet=request,
    )
    try:
        spec.check()
    except DeploySpecError as exc:
        raise CLIError(CLIErrorCode.VALIDATION, str(exc)) from None
    header = (
        f"SkyPilot task written by `osmosis rollout deploy` for {target.rollout_dir.name}: one\n"
        f"rollout server per cluster ({', '.join(spec.clusters)}). Secrets are listed by name;\n"
        "their values come from your shell at `sky launch --secret NAME` and are never written."
    )
    text = render_yaml(build_task(spec), header)
    if request.dry_run:
        out.stdout.write(text)
        return
    paths = DeployPaths.of(workspace, name)
    paths.root.mkdir(parents=True, exist_ok=True)
    paths.task.write_text(text, encoding="utf-8")
    commands = [" ".join(["sky", *c]) for c in launch_commands(spec, paths.task)]
    if not request.launch:
        out.emit_operation(
            "rollout.deploy",
            message=f"Wrote {paths.task}; launch it with --launch or these commands.",
            resource={"task": str(paths.task), "clusters": spec.clusters, "commands": commands},
            next_steps=commands,
        )
        return
    try:
        urls = launch(spec, paths)
    except DeployError as exc:
        raise CLIError(CLIErrorCode.PLATFORM_ERROR, str(exc)) from None
    out.emit_operation(
        "rollout.deploy",
        message=f"Launched {len(urls)} rollout server(s); their URLs are in {paths.servers}.",
        resource={
            "task": str(paths.task),
            "clusters": spec.clusters,
            "servers": urls,
            "servers_file": str(paths.servers),
        },
        next_steps=[
            f"osmosis eval run CONFIG --servers-file {paths.servers}",
            f"osmosis rollout deploy {request.target} --down --name {name}",
        ],
        lines=urls,
    )


def _down(workspace: Path, name: str) -> None:
    try:
        clusters = teardown(workspace, name)
    except DeployError as exc:
        raise CLIError(CLIErrorCode.PLATFORM_ERROR, str(exc)) from None
    get_output().emit_operation(
        "rollout.deploy.down",
        message=f"Tore down {', '.join(clusters)}.",
        resource={"clusters": clusters},
    )
