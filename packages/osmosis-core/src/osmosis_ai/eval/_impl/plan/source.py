"""What to evaluate: an eval config (``configs/eval/x.toml``) or a rollout folder / entrypoint.

Both forms resolve to one :class:`EvalSource`, so the planner never asks which form it got. A
config brings its dataset, model, ``[evaluation]`` knobs, ``[env]`` and secret names; a rollout
folder (``rollouts/x``, entrypoint ``main.py``) or entrypoint file (``rollouts/x/agent.py``)
brings only the code, and the caller passes the dataset and model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from osmosis_ai.errors import ConfigurationError

if TYPE_CHECKING:
    from osmosis_ai.config import EvalConfig, EvaluationSection

DEFAULT_ENTRYPOINT = "main.py"


class EvalPlanError(ConfigurationError):
    """The evaluation cannot run as asked; the message says what to fix."""


@dataclass(slots=True)
class EvalSource:
    rollout_name: str
    rollout_dir: Path
    entrypoint: Path  # absolute, inside rollout_dir
    workspace: Path
    evaluation: EvaluationSection
    config: EvalConfig | None = None
    config_path: Path | None = None
    dataset_name: str | None = None  # the config's experiment.dataset
    model: str | None = None  # the config's experiment.model_path
    env: dict[str, str] = field(default_factory=dict)
    secret_names: list[str] = field(default_factory=list)
    #: ``--env SPEC`` / ``[experiment] env``: the environment served (its canonical spec), and
    #: its rows file, the dataset when none is given (see :mod:`.environment`).
    environment: str | None = None
    environment_rows: Path | None = None

    @property
    def entrypoint_label(self) -> str:
        return self.entrypoint.relative_to(self.rollout_dir).as_posix()

    @property
    def name_stem(self) -> str:
        """Stem of generated run names: the config's file name, else the rollout's name."""
        return self.config_path.stem if self.config_path is not None else self.rollout_name


def find_workspace(start: Path) -> Path:
    """The folder holding ``rollouts/``: above ``configs/eval/``, else the nearest ancestor."""
    start = start.resolve()
    if start.parent.name == "eval" and start.parent.parent.name == "configs":
        return start.parent.parent.parent
    for folder in start.parents:
        if (folder / "rollouts").is_dir():
            return folder
    return Path.cwd().resolve()


def resolve_source(
    target: Path | None, workspace: Path | None = None, environment: str | None = None
) -> EvalSource:
    """``target`` is a ``.toml`` eval config, a rollout folder or an entrypoint ``.py`` file;
    with ``environment`` (``--env SPEC``) it is an optional eval config, or ``None``."""
    if environment is not None or target is None:
        return _from_environment(target, workspace, environment)
    target = target.expanduser()
    if target.suffix == ".toml":
        from osmosis_ai.config import load_eval_config

        if load_eval_config(target).experiment.env:
            return _from_environment(target, workspace, None)
        return _from_config(target, workspace)
    if target.is_dir():
        rollout_dir, entry = target.resolve(), DEFAULT_ENTRYPOINT
    elif target.is_file() and target.suffix == ".py":
        rollout_dir, entry = target.resolve().parent, target.name
    else:
        raise EvalPlanError(
            f"{target} is not an eval config (.toml), a rollout folder or an entrypoint (.py)"
            + ("" if target.exists() else ": it does not exist")
        )
    from osmosis_ai.config import EvaluationSection

    return EvalSource(
        rollout_name=rollout_dir.name,
        rollout_dir=rollout_dir,
        entrypoint=_contained(rollout_dir, entry, "the entrypoint"),
        workspace=(workspace or find_workspace(rollout_dir)).resolve(),
        evaluation=EvaluationSection(),
    )


def _from_environment(
    target: Path | None, workspace: Path | None, environment: str | None
) -> EvalSource:
    """The environment named by ``--env`` (or the config's ``[experiment] env``) as the rollout;
    an eval config given too still brings its knobs, model, ``[env]`` and secrets."""
    from osmosis_ai.config import EvaluationSection, load_eval_config
    from osmosis_ai.eval._impl.plan.environment import materialize_environment

    config = None
    if target is not None:
        target = target.expanduser()
        if target.suffix != ".toml":
            raise EvalPlanError(
                f"--env names the rollout: {target} is not an eval config (.toml); drop it, or "
                "pass an eval config whose [experiment] settings should apply"
            )
        config = load_eval_config(target)
    spec = environment or (config.experiment.env if config is not None else None)
    if spec is None:
        raise EvalPlanError(
            "nothing to evaluate: pass an eval config, a rollout folder or entrypoint, or "
            "--env SOURCE:NAME (docs/environments.md)"
        )
    root = (workspace or (find_workspace(target) if target else Path.cwd())).resolve()
    made = materialize_environment(spec, root)
    return EvalSource(
        rollout_name=made.name,
        rollout_dir=made.rollout_dir,
        entrypoint=made.entrypoint,
        workspace=root,
        evaluation=config.evaluation if config is not None else EvaluationSection(),
        config=config,
        config_path=target.resolve() if config is not None and target is not None else None,
        model=config.experiment.model_path if config is not None else None,
        env=dict(config.env) if config is not None else {},
        secret_names=config.required_secrets if config is not None else [],
        environment=made.spec,
        environment_rows=made.rows_path,
    )


def _from_config(path: Path, workspace: Path | None) -> EvalSource:
    from osmosis_ai.config import load_eval_config

    config = load_eval_config(path)
    root = (workspace or find_workspace(path)).resolve()
    rollout_dir = config.rollout_dir(root).resolve()
    if not rollout_dir.is_dir():
        raise EvalPlanError(
            f"rollout folder {rollout_dir} does not exist (experiment.rollout = "
            f"{config.rollout!r}); create it or fix the config"
        )
    return EvalSource(
        rollout_name=config.rollout,
        rollout_dir=rollout_dir,
        entrypoint=_contained(rollout_dir, config.entrypoint, "experiment.entrypoint"),
        workspace=root,
        evaluation=config.evaluation,
        config=config,
        config_path=path.resolve(),
        dataset_name=config.experiment.dataset,
        model=config.experiment.model_path,
        env=dict(config.env),
        secret_names=config.required_secrets,
    )


def _contained(rollout_dir: Path, entry: str, what: str) -> Path:
    entrypoint = (rollout_dir / entry).resolve()
    if not entrypoint.is_relative_to(rollout_dir):
        raise EvalPlanError(f"{what} {entry!r} points outside {rollout_dir}")
    if not entrypoint.is_file():
        raise EvalPlanError(f"entrypoint {entrypoint} does not exist ({what})")
    return entrypoint
