"""Resolve an eval invocation (config + flags) into a complete, validated :class:`EvalPlan`.

Why a separate planning step: every user mistake (a missing dataset, a bad ``--rows``, an unset
API key, an entrypoint outside the rollout folder) is reported *before* a run directory is
created or a process is started, and the plan is exactly what the run manifest locks.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from osmosis_cli.local_eval.dataset import SUPPORTED_SUFFIXES, DatasetRow, file_sha256, load_dataset
from osmosis_cli.local_eval.manifest import LOCK_VERSIONS, inputs_digest, source_digest
from osmosis_cli.local_eval.run_layout import (
    DEFAULT_OUTPUT_ROOT,
    generate_run_name,
    validate_run_name,
)
from osmosis_cli.local_eval.selection import select_rows
from osmosis_cli.local_eval.upstream import Upstream, resolve_upstream

if TYPE_CHECKING:
    from osmosis_cli.config import EvalConfig
    from osmosis_cli.local_eval.proxy import RetryPolicy


class EvalPlanError(ValueError):
    """The invocation cannot run; the message says what to fix."""


@dataclass(slots=True)
class EvalOptions:
    """Flags of ``osmosis eval run`` (``None`` = take it from the config)."""

    config_path: Path
    dataset: Path | None = None
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    n: int | None = None
    limit: int | None = None
    rows: str | None = None
    max_in_flight: int | None = None
    pass_threshold: float | None = None
    name: str | None = None
    fresh: bool = False
    retry_failed: bool = False
    output: Path | None = None
    isolated: bool = False
    workspace: Path | None = None
    server_start_timeout_sec: float | None = None
    retry_policy: RetryPolicy | None = None
    #: Overrides the per-item deadline (agent + grader timeout + 60 s, else one hour).
    item_deadline_sec: float | None = None


@dataclass(slots=True)
class EvalPlan:
    """Everything a run needs, resolved and validated."""

    config: EvalConfig
    config_path: Path
    workspace: Path
    rollout_dir: Path
    entrypoint: Path
    dataset_path: Path
    rows: list[DatasetRow]  # the selected rows, in selection order
    total_dataset_rows: int
    upstream: Upstream
    n: int
    pass_threshold: float
    agent_timeout_sec: float | None
    grader_timeout_sec: float | None
    max_in_flight: int | None
    env: dict[str, str]
    secrets: dict[str, str] = field(repr=False)
    inputs: dict[str, Any]
    run_name: str
    output_root: Path
    fresh: bool
    retry_failed: bool
    isolated: bool
    server_start_timeout_sec: float
    retry_policy: RetryPolicy | None = None
    item_deadline_sec: float | None = None

    @property
    def run_dir(self) -> Path:
        return self.output_root / self.run_name

    @property
    def total_work_items(self) -> int:
        return len(self.rows) * self.n


def find_workspace(config_path: Path) -> Path:
    """The folder holding ``rollouts/``: above ``configs/eval/``, else the nearest ancestor."""
    config_path = config_path.resolve()
    if config_path.parent.name == "eval" and config_path.parent.parent.name == "configs":
        return config_path.parent.parent.parent
    for folder in config_path.parents:
        if (folder / "rollouts").is_dir():
            return folder
    return Path.cwd().resolve()


def _resolve_dataset(options: EvalOptions, config: EvalConfig, workspace: Path) -> Path:
    if options.dataset is not None:
        path = options.dataset.expanduser()
        if not path.is_file():
            raise EvalPlanError(f"--dataset {options.dataset} is not a file")
        return path.resolve()
    name = config.experiment.dataset
    candidates = [workspace / name, workspace / "data" / name]
    candidates += [workspace / "data" / f"{name}{suffix}" for suffix in SUPPORTED_SUFFIXES]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    tried = ", ".join(str(c.relative_to(workspace)) for c in candidates)
    raise EvalPlanError(
        f"experiment.dataset {name!r} is not a local file (tried {tried}); "
        "pass --dataset PATH with a JSONL, CSV or Parquet file"
    )


def _resolve_rollout(config: EvalConfig, workspace: Path) -> tuple[Path, Path]:
    rollout_dir = config.rollout_dir(workspace).resolve()
    if not rollout_dir.is_dir():
        raise EvalPlanError(
            f"rollout folder {rollout_dir} does not exist (experiment.rollout = "
            f"{config.rollout!r}); create it or fix the config"
        )
    entrypoint = (rollout_dir / config.entrypoint).resolve()
    if not entrypoint.is_relative_to(rollout_dir):
        raise EvalPlanError(
            f"experiment.entrypoint {config.entrypoint!r} points outside {rollout_dir}"
        )
    if not entrypoint.is_file():
        raise EvalPlanError(f"entrypoint {entrypoint} does not exist (experiment.entrypoint)")
    return rollout_dir, entrypoint


def _resolve_secrets(
    names: list[str], environ: os._Environ[str] | dict[str, str]
) -> dict[str, str]:
    missing = [name for name in names if not environ.get(name)]
    if missing:
        raise EvalPlanError(
            f"the rollout needs secrets that are not set: {', '.join(missing)}; export them "
            "(or put them in .env) before running the eval"
        )
    return {name: environ[name] for name in names}


def build_plan(options: EvalOptions, *, environ: dict[str, str] | None = None) -> EvalPlan:
    """Validate the config and flags; raises :class:`EvalPlanError` or ``ConfigError``."""
    from osmosis_cli.config import load_eval_config
    from osmosis_cli.local_eval.dataset import DatasetError
    from osmosis_cli.local_eval.run_layout import RunLayoutError
    from osmosis_cli.local_eval.selection import SelectionError
    from osmosis_cli.local_eval.upstream import UpstreamError

    env_map = os.environ if environ is None else environ
    config = load_eval_config(options.config_path)
    workspace = (options.workspace or find_workspace(options.config_path)).resolve()
    rollout_dir, entrypoint = _resolve_rollout(config, workspace)
    evaluation = config.evaluation

    n = options.n if options.n is not None else evaluation.n
    if n < 1:
        raise EvalPlanError(f"--n must be at least 1, got {n}")
    threshold = (
        options.pass_threshold if options.pass_threshold is not None else evaluation.pass_threshold
    )
    if not math.isfinite(threshold):
        raise EvalPlanError("--pass-threshold must be a finite number")
    if options.max_in_flight is not None and options.max_in_flight < 1:
        raise EvalPlanError(f"--max-in-flight must be at least 1, got {options.max_in_flight}")
    max_in_flight = options.max_in_flight
    if max_in_flight is None and "batch_size" in evaluation.model_fields_set:
        max_in_flight = evaluation.batch_size

    try:
        dataset_path = _resolve_dataset(options, config, workspace)
        all_rows = load_dataset(dataset_path)
        limit = options.limit
        if options.rows is None and limit is None:
            limit = evaluation.limit
        selection = select_rows(len(all_rows), rows=options.rows, limit=limit)
        upstream = resolve_upstream(
            options.model or config.experiment.model_path,
            base_url=options.base_url,
            api_key_env=options.api_key_env,
            environ=dict(env_map),
        )
    except (DatasetError, SelectionError, UpstreamError) as exc:
        raise EvalPlanError(str(exc)) from exc
    if not selection:
        raise EvalPlanError("the row selection is empty")
    secrets = _resolve_secrets(config.required_secrets, env_map)

    output_root = (options.output or workspace / DEFAULT_OUTPUT_ROOT).resolve()
    rows = [all_rows[i] for i in selection]
    import hashlib

    selection_digest = hashlib.sha256(",".join(map(str, selection)).encode()).hexdigest()
    inputs: dict[str, Any] = {
        "model": upstream.locked_identity(),
        "dataset": {
            "sha256": file_sha256(dataset_path),
            "selected_rows": len(selection),
            "selection_sha256": selection_digest,
        },
        "n": n,
        "rollout": {
            "name": config.rollout,
            "entrypoint": config.entrypoint,
            "source_digest": source_digest(rollout_dir, exclude=(output_root,)),
        },
        "env": dict(sorted(config.env.items())),
        "secret_names": sorted(secrets),
        "timeouts": {
            "agent_workflow_timeout_s": evaluation.agent_workflow_timeout_s,
            "grader_timeout_s": evaluation.grader_timeout_s,
        },
        "versions": LOCK_VERSIONS,
    }
    try:
        run_name = (
            validate_run_name(options.name)
            if options.name is not None
            else generate_run_name(options.config_path.stem, inputs_digest(inputs))
        )
    except RunLayoutError as exc:
        raise EvalPlanError(str(exc)) from exc
    start_timeout = options.server_start_timeout_sec or (600.0 if options.isolated else 120.0)
    return EvalPlan(
        config=config,
        config_path=options.config_path.resolve(),
        workspace=workspace,
        rollout_dir=rollout_dir,
        entrypoint=entrypoint,
        dataset_path=dataset_path,
        rows=rows,
        total_dataset_rows=len(all_rows),
        upstream=upstream,
        n=n,
        pass_threshold=threshold,
        agent_timeout_sec=evaluation.agent_workflow_timeout_s,
        grader_timeout_sec=evaluation.grader_timeout_s,
        max_in_flight=max_in_flight,
        env=dict(config.env),
        secrets=secrets,
        inputs=inputs,
        run_name=run_name,
        output_root=output_root,
        fresh=options.fresh,
        retry_failed=options.retry_failed,
        isolated=options.isolated,
        server_start_timeout_sec=start_timeout,
        retry_policy=options.retry_policy,
        item_deadline_sec=options.item_deadline_sec,
    )
