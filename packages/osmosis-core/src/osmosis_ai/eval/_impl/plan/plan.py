"""Resolve an evaluation request (what to evaluate + arguments) into a validated :class:`EvalPlan`.

Why a separate planning step: every user mistake (a missing dataset, a bad row selection, an
unset API key, an entrypoint outside the rollout folder) is reported *before* a run directory is
created or a process is started, and the plan is exactly what the run manifest locks.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from osmosis_ai.errors import ConfigurationError
from osmosis_ai.eval._impl.plan.dataset import (
    SUPPORTED_SUFFIXES,
    DatasetError,
    DatasetRow,
    file_sha256,
    load_dataset,
)
from osmosis_ai.eval._impl.plan.mock_script import attach_mock_script, mock_script_model
from osmosis_ai.eval._impl.plan.options import (
    EvalOptions,
    PathLike,
    RunTuning,
    request_record,
    stored_request,
)
from osmosis_ai.eval._impl.plan.selection import SelectionError, select_rows
from osmosis_ai.eval._impl.plan.source import EvalPlanError, EvalSource, resolve_source
from osmosis_ai.eval._impl.proxy.upstream import Upstream, UpstreamError, resolve_upstream
from osmosis_ai.eval._impl.run_dir.layout import (
    DEFAULT_OUTPUT_ROOT,
    RunLayoutError,
    generate_run_name,
    validate_run_name,
)
from osmosis_ai.eval._impl.run_dir.manifest import LOCK_VERSIONS, inputs_digest, source_digest

if TYPE_CHECKING:
    from osmosis_ai.config import EvalConfig

__all__ = ["EvalOptions", "EvalPlan", "EvalPlanError", "RunTuning", "build_plan"]

#: A work item's deadline when the agent and grader timeouts do not both say.
DEFAULT_ITEM_DEADLINE_SEC = 3600.0
_DEADLINE_MARGIN_SEC = 60.0


def item_deadline(agent_timeout: float | None, grader_timeout: float | None) -> float:
    """agent + grader timeout + 60 s when both are set, else one hour."""
    if agent_timeout and grader_timeout and agent_timeout > 0 and grader_timeout > 0:
        return agent_timeout + grader_timeout + _DEADLINE_MARGIN_SEC
    return DEFAULT_ITEM_DEADLINE_SEC


@dataclass(frozen=True, slots=True)
class EvalKnobs:
    """The run's tunables: the request's value, else the eval config's, validated."""

    n: int
    pass_threshold: float
    max_in_flight: int | None
    agent_timeout_sec: float | None
    grader_timeout_sec: float | None
    max_cost: float | None = None
    #: ``[evaluation] metric_thresholds``: per grader metric, its pass threshold.
    metric_thresholds: Mapping[str, float] = field(default_factory=dict)
    #: ``[evaluation.silence_tripwires]``: tripwire name -> the reason it is silenced.
    silenced_tripwires: Mapping[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class EvalPlan:
    """Everything a run needs, resolved and validated.

    ``options`` is the request as given (after a resume by name filled in what it left out);
    the other fields are what was resolved from it and the eval config.
    """

    source: EvalSource
    dataset_path: Path
    rows: list[DatasetRow]  # the selected rows, in selection order
    total_dataset_rows: int
    upstream: Upstream
    knobs: EvalKnobs
    env: dict[str, str]
    secrets: dict[str, str] = field(repr=False)
    inputs: dict[str, Any]
    run_name: str
    output_root: Path
    server_start_timeout_sec: float
    options: EvalOptions = field(default_factory=EvalOptions)
    tuning: RunTuning = field(default_factory=RunTuning)
    workers: int = 1
    #: The explicit choices of the request that started the run (model, dataset, selection,
    #: n), stored in the manifest so a resume given only the run name reuses them.
    request: dict[str, Any] = field(default_factory=dict)
    #: ``--servers``: the rollout servers to drive (empty: start a local one), their inbound
    #: key (``OSMOSIS_ROLLOUT_API_KEY``), and where the policy proxy listens / is reached.
    servers: list[str] = field(default_factory=list)
    servers_api_key: str | None = field(default=None, repr=False)
    proxy_host: str = "127.0.0.1"
    proxy_url: str | None = None

    @property
    def proxy_port(self) -> int:
        """The port of ``proxy_url`` (bound by the proxy), else 0 (any free port)."""
        from urllib.parse import urlsplit

        return (urlsplit(self.proxy_url).port or 0) if self.proxy_url else 0

    #: The policy ``--mock-script`` loaded (``None``: the built-in multiply solver).
    mock_policy: Callable[[dict[str, Any]], Awaitable[Any]] | None = None

    @property
    def run_dir(self) -> Path:
        return self.output_root / self.run_name

    @property
    def total_work_items(self) -> int:
        return len(self.rows) * self.knobs.n

    @property
    def deadline_sec(self) -> float:
        """A work item's deadline: ``item_deadline_sec``, else derived from the two timeouts."""
        knobs = self.knobs
        return self.tuning.item_deadline_sec or item_deadline(
            knobs.agent_timeout_sec, knobs.grader_timeout_sec
        )

    @property
    def config(self) -> EvalConfig | None:
        return self.source.config

    @property
    def config_path(self) -> Path | None:
        return self.source.config_path

    @property
    def workspace(self) -> Path:
        return self.source.workspace

    @property
    def rollout_dir(self) -> Path:
        return self.source.rollout_dir

    @property
    def entrypoint(self) -> Path:
        return self.source.entrypoint

    @property
    def rollout_name(self) -> str:
        return self.source.rollout_name


def _resolve_dataset(options: EvalOptions, source: EvalSource) -> Path:
    if options.dataset is not None:
        path = Path(options.dataset).expanduser()
        if not path.is_file():
            raise EvalPlanError(f"dataset {options.dataset} is not a file")
        return path.resolve()
    if source.environment_rows is not None:
        return source.environment_rows
    name = source.dataset_name
    if name is None:
        raise EvalPlanError(
            "no dataset given: pass a JSONL, CSV or Parquet file (dataset=... or --dataset)"
        )
    workspace = source.workspace
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


def _resolve_secrets(names: list[str], environ: Mapping[str, str]) -> dict[str, str]:
    missing = [name for name in names if not environ.get(name)]
    if missing:
        raise EvalPlanError(
            f"the rollout needs secrets that are not set: {', '.join(missing)}; export them "
            "(or put them in .env) before running the eval"
        )
    return {name: environ[name] for name in names}


def _knobs(options: EvalOptions, source: EvalSource) -> EvalKnobs:
    evaluation = source.evaluation
    n = options.n if options.n is not None else evaluation.n
    if n < 1:
        raise EvalPlanError(f"n (--n) must be at least 1, got {n}")
    threshold = (
        options.pass_threshold if options.pass_threshold is not None else evaluation.pass_threshold
    )
    if not math.isfinite(threshold):
        raise EvalPlanError("the pass threshold (--pass-threshold) must be a finite number")
    if options.max_in_flight is not None and options.max_in_flight < 1:
        raise EvalPlanError(
            f"max_in_flight (--max-in-flight) must be at least 1, got {options.max_in_flight}"
        )
    max_in_flight = options.max_in_flight
    if max_in_flight is None and "batch_size" in evaluation.model_fields_set:
        max_in_flight = evaluation.batch_size
    agent = options.agent_timeout_sec or evaluation.agent_workflow_timeout_s
    grader = options.grader_timeout_sec or evaluation.grader_timeout_s
    max_cost = options.max_cost if options.max_cost is not None else evaluation.max_cost_usd
    if max_cost is not None and not (math.isfinite(max_cost) and max_cost > 0):
        raise EvalPlanError(
            f"the cost budget (--max-cost) must be a positive USD amount, got {max_cost}"
        )
    thresholds = evaluation.metric_thresholds
    if not all(math.isfinite(value) for value in thresholds.values()):
        raise EvalPlanError("[evaluation] metric_thresholds must be finite numbers")
    from osmosis_ai.eval._impl.results.tripwires import TripwireConfigError, check_silenced

    try:
        silenced = check_silenced(evaluation.silence_tripwires)
    except TripwireConfigError as exc:
        raise EvalPlanError(str(exc)) from exc
    return EvalKnobs(
        n, threshold, max_in_flight, agent, grader, max_cost, dict(thresholds), silenced
    )


def _select(
    options: EvalOptions, source: EvalSource, environ: Mapping[str, str]
) -> tuple[Path, list[DatasetRow], list[int], Upstream]:
    try:
        dataset_path = _resolve_dataset(options, source)
        all_rows = load_dataset(dataset_path)
        limit = options.limit
        if limit is not None and limit < 1:
            raise EvalPlanError(
                f"--limit must be at least 1, got {limit}; omit --limit to evaluate every row"
            )
        if options.rows is None and limit is None:
            limit = source.evaluation.limit
        rows_spec = options.rows
        if rows_spec is not None and not isinstance(rows_spec, str):
            rows_spec = ",".join(str(int(i)) for i in rows_spec)
        selection = select_rows(len(all_rows), rows=rows_spec, limit=limit)
        model = options.model or source.model
        if options.mock_script is not None:
            model = mock_script_model(options.model, options.base_url)
        if model is None:
            raise EvalPlanError("no model given: pass model=... (--model), or 'mock' offline")
        upstream = resolve_upstream(
            model,
            base_url=options.base_url,
            api_key=options.api_key,
            api_key_env=options.api_key_env,
            environ=dict(environ),
        )
        if options.sampling:
            upstream = replace(upstream, sampling=dict(options.sampling))
    except (DatasetError, SelectionError, UpstreamError) as exc:
        raise EvalPlanError(str(exc)) from exc
    if not selection:
        raise EvalPlanError("the row selection is empty")
    return dataset_path, all_rows, selection, upstream


def _locked_inputs(
    source: EvalSource,
    dataset_path: Path,
    selection: list[int],
    upstream: Upstream,
    knobs: EvalKnobs,
    env: dict[str, str],
    secrets: dict[str, str],
    output_root: Path,
) -> dict[str, Any]:
    selection_digest = hashlib.sha256(",".join(map(str, selection)).encode()).hexdigest()
    return {
        "model": upstream.locked_identity(),
        "dataset": {
            "sha256": file_sha256(dataset_path),
            "selected_rows": len(selection),
            "selection_sha256": selection_digest,
        },
        "n": knobs.n,
        "rollout": {
            **({"environment": source.environment} if source.environment else {}),
            "name": source.rollout_name,
            "entrypoint": source.entrypoint_label,
            "source_digest": source_digest(source.rollout_dir, exclude=(output_root,)),
        },
        "env": dict(sorted(env.items())),
        "secret_names": sorted(secrets),
        "timeouts": {
            "agent_workflow_timeout_s": knobs.agent_timeout_sec,
            "grader_timeout_s": knobs.grader_timeout_sec,
        },
        "versions": LOCK_VERSIONS,
    }


#: ``workers="auto"`` starts one worker per this many work items (each worker imports the
#: rollout once, which a short eval would not win back).
WORK_ITEMS_PER_AUTO_WORKER = 32


def _workers(requested: int | str, max_in_flight: int | None, work_items: int) -> int:
    """Worker processes for the rollout server. ``auto``: the usable cores (at most 8), no more
    than rollouts can be in flight at once, and one per 32 work items (a short eval runs in the
    server process)."""
    from osmosis_ai.rollout.server._impl.workers import resolve_workers

    count = resolve_workers(requested)
    if isinstance(requested, str) and requested.strip().lower() == "auto":
        count = min(count, max_in_flight or count, work_items // WORK_ITEMS_PER_AUTO_WORKER)
    return max(1, count)


def build_plan(
    target: PathLike | None,
    options: EvalOptions | None = None,
    *,
    tuning: RunTuning | None = None,
    environ: Mapping[str, str] | None = None,
) -> EvalPlan:
    """Validate the request (``target``: an eval config, a rollout folder or an entrypoint file;
    with ``options.environment`` an optional eval config); raises :class:`EvalPlanError` or
    ``ConfigError``."""
    options = options if options is not None else EvalOptions()
    tuning = tuning if tuning is not None else RunTuning()
    env_map: Mapping[str, str] = os.environ if environ is None else environ
    if options.max_failures is not None and options.max_failures < 1:
        raise EvalPlanError(
            f"--max-failures must be at least 1, got {options.max_failures}; omit it to let "
            "every work item run"
        )
    if options.allow_changed and not options.retry_failed:
        raise EvalPlanError(
            "--allow-changed needs --retry-failed: only failed work items may run on changed "
            "rollout code (the others keep their results)"
        )
    if options.environment is not None and options.isolated:
        raise EvalPlanError(
            "--isolated installs a rollout's own dependencies; an --env environment runs in "
            "this environment (install its extra, e.g. pip install 'osmosis-ai[verifiers]'): "
            "drop --isolated"
        )
    source = resolve_source(
        Path(target) if target is not None else None, tuning.workspace, options.environment
    )
    output_root = Path(options.output_dir or source.workspace / DEFAULT_OUTPUT_ROOT).resolve()
    options = stored_request(options, output_root)
    knobs = _knobs(options, source)
    dataset_path, all_rows, selection, upstream = _select(options, source, env_map)
    mock_policy = None
    if options.mock_script is not None:
        try:
            upstream, mock_policy = attach_mock_script(
                upstream, os.fspath(options.mock_script), all_rows
            )
        except ConfigurationError as exc:
            raise EvalPlanError(str(exc)) from exc
    secrets = _resolve_secrets(source.secret_names, env_map)
    env = {**source.env, **(options.env or {})}
    inputs = _locked_inputs(
        source, dataset_path, selection, upstream, knobs, env, secrets, output_root
    )
    try:
        run_name = (
            validate_run_name(options.name)
            if options.name is not None
            else generate_run_name(source.name_stem, inputs_digest(inputs))
        )
    except RunLayoutError as exc:
        raise EvalPlanError(str(exc)) from exc
    return EvalPlan(
        source=source,
        dataset_path=dataset_path,
        rows=[all_rows[i] for i in selection],
        total_dataset_rows=len(all_rows),
        upstream=upstream,
        knobs=knobs,
        env=env,
        secrets=secrets,
        inputs=inputs,
        run_name=run_name,
        output_root=output_root,
        options=options,
        tuning=tuning,
        workers=_workers(options.workers, knobs.max_in_flight, len(selection) * knobs.n),
        server_start_timeout_sec=tuning.server_start_timeout_sec
        or (600.0 if options.isolated else 120.0),
        **_fleet_fields(options, env_map),
        request=request_record(options, dataset_path, upstream),
        mock_policy=mock_policy,
    )


def _fleet_fields(options: EvalOptions, env_map: Mapping[str, str]) -> dict[str, Any]:
    """``servers``, their key and the proxy's address, checked (see :mod:`osmosis_ai.eval._impl.fleet.servers`)."""
    from osmosis_ai.eval._impl.fleet.servers import (
        SERVERS_KEY_ENV,
        normalize_server_url,
        resolve_servers,
    )

    servers = resolve_servers(
        options.servers,
        Path(options.servers_file) if options.servers_file is not None else None,
    )
    if servers and options.max_cost is not None:
        raise EvalPlanError(
            "--max-cost is not supported with --servers yet: run the budgeted eval with a local "
            "rollout server"
        )
    if servers and options.isolated:
        raise EvalPlanError(
            "--isolated starts a local rollout server in the rollout's own environment; with "
            "--servers the servers already run the rollout: drop one of the two"
        )
    proxy_url = normalize_server_url(options.proxy_url) if options.proxy_url else None
    host = (options.proxy_host or "127.0.0.1").strip()
    if host not in ("127.0.0.1", "localhost", "::1") and proxy_url is None:
        raise EvalPlanError(
            f"--proxy-host {host} makes the policy proxy reachable from other machines; also "
            "pass --proxy-url with the address the rollout servers use to reach it (e.g. "
            "http://10.0.0.2:9000; the proxy binds that port)"
        )
    return {
        "servers": servers,
        "servers_api_key": env_map.get(SERVERS_KEY_ENV) or None,
        "proxy_host": host,
        "proxy_url": proxy_url,
    }
