"""Submitting eval and training runs and reading them back.

``submit`` is the whole ``eval submit`` / ``train submit`` flow: preflight, token, secrets, a
summary, confirmation, a look-up of the config's dataset on the platform, then one POST. Nothing
is sent before the user (or ``--yes``) agrees.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Output
from osmosis_cli.platform.client import PlatformClient
from osmosis_cli.platform.credentials import require_token
from osmosis_cli.platform.git_info import describe_repository
from osmosis_cli.platform.run_ops import COMMANDS, ENDPOINTS, Kind
from osmosis_cli.platform.secrets import resolve_secrets
from osmosis_cli.platform.settings import platform_url

if TYPE_CHECKING:
    from osmosis_ai.config import SubmitConfig


@dataclass
class SubmitOptions:
    config_path: Path
    kind: Kind
    yes: bool = False
    secrets_file: str | None = None
    name: str | None = None
    import_timeout_sec: float = 60.0


def submit(options: SubmitOptions, output: Output) -> None:
    from osmosis_cli.preflight import resolve_target, run_preflight
    from osmosis_cli.preflight.target import config_kind
    from osmosis_cli.workspace import require_layout

    expected = "eval" if options.kind == "eval" else "training"
    if options.config_path.suffix != ".toml" or config_kind(options.config_path) != expected:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"{options.config_path} is not a {expected} config: {expected} configs are .toml "
            f"files under configs/{expected}/.",
            details={"path": str(options.config_path)},
        )
    environment = _environment_of(options.config_path)
    if environment is not None:  # [experiment] env: no rollout folder to check locally
        config, workspace, target = environment[0], environment[1], None
    else:
        target = resolve_target(options.config_path)
        config = target.config
        workspace = target.workspace
    if config is None or workspace is None:  # resolve_target always sets both for a .toml
        raise CLIError(CLIErrorCode.INTERNAL, "config target without a config")
    require_layout(workspace)
    # an environment is run by the platform itself: no code to clone, no origin needed
    git = _describe_git(workspace, output, needs_origin=environment is None)
    url = platform_url()
    client = PlatformClient(url, require_token(url).value)

    if target is not None:
        output.progress("Running the rollout preflight...")
        report = run_preflight(target, timeout_sec=options.import_timeout_sec)
        report.enforce(output, kind=expected)

    secrets = resolve_secrets(
        config.required_secrets, secrets_file=options.secrets_file, output=output
    )

    summary = {
        "Platform": url,
        "Rollout": config.experiment.env or config.rollout,
        "Entrypoint": config.entrypoint,
        "Model": config.experiment.model_path,
        "Dataset": config.experiment.dataset,
        "Branch": config.experiment.branch or git.get("branch"),
        "Commit": config.experiment.commit_sha or git.get("commit_sha"),
        "Env vars": sorted(config.env) or None,
        "Secrets": [f"{n} ({secrets.sources[n]})" for n in config.required_secrets] or None,
    }
    if not output.is_json:
        output.emit_detail(summary, title=f"{expected.capitalize()} run")
    if not output.confirm(f"Submit this {expected} run to {url}?", assume_yes=options.yes):
        raise CLIError(CLIErrorCode.VALIDATION, "Submission cancelled; nothing was sent.")
    if not config.experiment.env:  # an environment's rows are its dataset: nothing uploaded
        from osmosis_cli.platform.datasets import check_run_dataset

        check_run_dataset(client, config.experiment.dataset, workspace, output)

    body: dict[str, Any] = config.sections_for_platform()
    body["secrets"] = {"required": config.required_secrets, "provided": secrets.values}
    body["git"] = git
    if options.name:
        body["name"] = options.name
    try:
        run = client.request(
            "POST", ENDPOINTS[options.kind], json=body, redact=secrets.values.values()
        )
    except CLIError as error:
        if error.code is CLIErrorCode.CONFLICT:
            raise name_taken(error, options.kind, options.name) from None
        raise
    if not isinstance(run, dict):
        raise CLIError(CLIErrorCode.PLATFORM_ERROR, "The platform returned no run.")
    _emit_submitted(options, output, run, config, workspace, git)


def name_taken(error: CLIError, kind: Kind, name: str | None) -> CLIError:
    """A submit's ``409``: the run name is taken. The platform's words plus the way out (the
    one place every submit that names its run goes through)."""
    command = COMMANDS[kind]
    shown = name or "NAME"
    reason = error.message.rstrip(".")
    return CLIError(
        CLIErrorCode.CONFLICT,
        f"{reason}. Run names are unique: pick another --name, or see the existing run with "
        f"'osmosis {command} info {shown}'.",
        details=error.details,
    )


def _environment_of(path: Path) -> tuple[Any, Path] | None:
    """``(config, workspace)`` when the config names an environment (``[experiment] env``):
    the platform runs the environment, there is no rollout folder to preflight."""
    from osmosis_cli.preflight.target import _workspace_of_config, load_config

    config = load_config(path)
    if not getattr(config.experiment, "env", None):
        return None
    return config, _workspace_of_config(path)


def _describe_git(workspace: Path, output: Output, *, needs_origin: bool) -> dict[str, Any]:
    """The workspace's git facts, warning when the platform would not run what is here. No
    ``origin`` when the platform has to clone the rollout code: refused (as the documented
    CLI does), there would be nothing for the run to clone."""
    git = describe_repository(workspace)
    if not git.get("remote_url") and needs_origin:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"{workspace} has no git `origin`: the platform runs the rollout code it clones from "
            "origin, so it would have nothing to run; nothing was submitted. Set origin to the "
            "repository connected to the platform and push: 'git remote add origin URL', then "
            "'git push -u origin HEAD'.",
            details={"workspace": str(workspace), "fix": "git remote add origin URL"},
        )
    if git.get("dirty"):
        output.warn(
            "DIRTY_WORKTREE",
            "the workspace has uncommitted changes; the platform runs what is pushed",
        )
    return git


def _emit_submitted(
    options: SubmitOptions,
    output: Output,
    run: dict[str, Any],
    config: SubmitConfig,
    workspace: Path,
    git: dict[str, Any],
) -> None:
    expected = "eval" if options.kind == "eval" else "training"
    resource = {
        **{
            k: run.get(k)
            for k in ("id", "name", "status", "model_name", "dataset_name", "created_at", "url")
        },
        "workspace_directory": str(workspace),
        "git": git,
        "config": {
            "path": str(options.config_path),
            "rollout": config.rollout,
            "entrypoint": config.entrypoint,
            "model": config.experiment.model_path,
            "dataset": config.experiment.dataset,
            "branch": config.experiment.branch,
            "commit_sha": config.experiment.commit_sha,
        },
    }
    command = COMMANDS[options.kind]
    output.emit_operation(
        f"{command}.submit",
        message=f"Submitted {expected} run {run.get('name') or run.get('id')} "
        f"({run.get('status')}).",
        resource=resource,
        lines=[f"url: {run['url']}"] if run.get("url") else [],
        next_steps=[f"osmosis {command} info {run.get('id')}"],
    )
