"""Turn ``CONFIG_OR_PATH`` into a rollout folder and entrypoint, enforcing containment.

Accepted forms: an eval/training config (``configs/eval/x.toml``), a rollout folder
(``rollouts/x``, entrypoint ``main.py``) or an entrypoint file (``rollouts/x/main.py``).
Every path is resolved with symlinks followed, so a link cannot smuggle code from outside the
rollout folder into what the platform would run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from osmosis_ai.config import ConfigError, SubmitConfig, load_eval_config, load_training_config
from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.workspace import find_workspace, relative, require_workspace

DEFAULT_ENTRYPOINT = "main.py"


@dataclass(frozen=True)
class RolloutTarget:
    rollout_dir: Path
    entrypoint: Path
    workspace: Path | None
    config: SubmitConfig | None = None

    @property
    def rollout_label(self) -> str:
        if self.workspace is not None:
            return relative(self.rollout_dir, self.workspace)
        return str(self.rollout_dir)

    @property
    def entrypoint_label(self) -> str:
        return self.entrypoint.relative_to(self.rollout_dir).as_posix()


def config_kind(path: Path) -> str:
    """``training`` for files under ``configs/training/``, else ``eval``."""
    return "training" if path.resolve().parent.name == "training" else "eval"


def load_config(path: Path) -> SubmitConfig:
    """Load an eval or training config (by folder), mapping problems to a VALIDATION error."""
    try:
        if config_kind(path) == "training":
            return load_training_config(path)
        return load_eval_config(path)
    except ConfigError as exc:
        raise CLIError(CLIErrorCode.VALIDATION, exc.render(), details=exc.as_details()) from None


def resolve_target(value: str | Path, *, cwd: Path | None = None) -> RolloutTarget:
    raw = Path(value).expanduser()
    path = raw if raw.is_absolute() else (cwd or Path.cwd()) / raw
    if path.suffix == ".toml":
        return _from_config(path)
    if not path.exists():
        raise CLIError(
            CLIErrorCode.NOT_FOUND,
            f"{value} does not exist. Pass an eval/training config (configs/eval/<name>.toml), "
            "a rollout folder (rollouts/<name>) or its entrypoint (rollouts/<name>/main.py).",
            details={"path": str(value)},
        )
    if path.is_dir():
        rollout_dir, entry = path.resolve(), DEFAULT_ENTRYPOINT
    else:
        if path.suffix != ".py":
            raise CLIError(
                CLIErrorCode.VALIDATION,
                f"{value} is neither a .toml config, a rollout folder nor a Python file.",
                details={"path": str(value)},
            )
        rollout_dir, entry = path.resolve().parent, path.name
    workspace = find_workspace(rollout_dir)
    return RolloutTarget(
        rollout_dir=rollout_dir,
        entrypoint=_contained_entrypoint(rollout_dir, entry),
        workspace=workspace,
    )


def _from_config(path: Path) -> RolloutTarget:
    config = load_config(path)
    workspace = _workspace_of_config(path)
    rollouts = (workspace / "rollouts").resolve()
    rollout_dir = config.rollout_dir(workspace)
    if not rollout_dir.is_dir():
        raise CLIError(
            CLIErrorCode.NOT_FOUND,
            f"experiment.rollout = {config.rollout!r}, but rollouts/{config.rollout}/ does not "
            f"exist in {workspace}. Create it with `osmosis rollout init {config.rollout}` or "
            "fix the name.",
            details={"rollout": config.rollout, "workspace": str(workspace)},
        )
    resolved = rollout_dir.resolve()
    if resolved.parent != rollouts:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"rollouts/{config.rollout} resolves to {resolved}, outside {rollouts}; the "
            "rollout folder must be a real folder inside rollouts/ (not a symlink elsewhere).",
            details={"rollout": config.rollout, "resolved": str(resolved)},
        )
    return RolloutTarget(
        rollout_dir=resolved,
        entrypoint=_contained_entrypoint(resolved, config.entrypoint),
        workspace=workspace,
        config=config,
    )


def _workspace_of_config(path: Path) -> Path:
    resolved = path.resolve()
    parent = resolved.parent
    if parent.name in {"eval", "training"} and parent.parent.name == "configs":
        return parent.parent.parent
    return require_workspace(
        parent,
        hint="Configs live in configs/eval/ or configs/training/ of a workspace "
        "(see `osmosis init`).",
    )


def _contained_entrypoint(rollout_dir: Path, entry: str) -> Path:
    candidate = (rollout_dir / entry).resolve()
    try:
        candidate.relative_to(rollout_dir)
    except ValueError:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"The entrypoint {entry!r} resolves to {candidate}, outside the rollout folder "
            f"{rollout_dir}. It must be a file inside the rollout folder.",
            details={"entrypoint": entry, "resolved": str(candidate)},
        ) from None
    if not candidate.is_file():
        raise CLIError(
            CLIErrorCode.NOT_FOUND,
            f"The entrypoint {entry!r} does not exist in {rollout_dir}.",
            details={"entrypoint": entry, "rollout_dir": str(rollout_dir)},
        )
    return candidate
