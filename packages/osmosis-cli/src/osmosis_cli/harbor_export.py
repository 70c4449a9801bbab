"""``osmosis rollout export-harbor``: a rollout + dataset as Harbor task folders.

The rollout's app is loaded as ``osmosis rollout serve`` loads it; its ``LocalBackend`` names the
workflow, grader and configs that :func:`osmosis_ai.rollout.backend.harbor.export_harbor_tasks`
bundles (the library function does the writing; this module only resolves the arguments).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osmosis_cli.errors import CLIError, CLIErrorCode


@dataclass(frozen=True, slots=True)
class ExportRequest:
    target: str
    dataset: Path
    out_dir: Path
    solution: str | None
    image: str | None
    bake_dependencies: bool
    name: str | None


def _local_backend(app: Any, label: str) -> Any:
    service = getattr(getattr(app, "state", None), "rollout_service", None)
    backend: Any = getattr(service, "backend", None)
    if getattr(backend, "workflow_cls", None) is None:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"{label} does not serve a LocalBackend (workflow + grader); export-harbor exports a "
            "rollout whose app is create_rollout_server(backend=LocalBackend(...)).",
        )
    if backend.grader_cls is None:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"{label} has no grader: the exported tasks' verifier runs the rollout's Grader. "
            "Pass grader= to its LocalBackend.",
        )
    return backend


def export_harbor(request: ExportRequest) -> list[Path]:
    from osmosis_cli.preflight import resolve_target
    from osmosis_cli.serving import _load_app

    try:
        from osmosis_ai.rollout.backend.harbor.export import DEFAULT_IMAGE, export_harbor_tasks
    except ModuleNotFoundError as exc:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f'export-harbor needs osmosis-harbor: pip install "osmosis-ai[harbor]" ({exc})',
        ) from exc
    from osmosis_ai.errors import ConfigurationError
    from osmosis_ai.eval import DatasetError, load_dataset

    target = resolve_target(request.target)
    label = f"{target.rollout_label}/{target.entrypoint_label}"
    backend = _local_backend(_load_app(target.rollout_dir, target.entrypoint, "app"), label)
    try:
        rows = load_dataset(request.dataset)
    except DatasetError as exc:
        raise CLIError(CLIErrorCode.VALIDATION, str(exc)) from exc
    try:
        return export_harbor_tasks(
            rows,
            request.out_dir,
            workflow=backend.workflow_cls,
            grader=backend.grader_cls,
            workflow_config=backend.workflow_config,
            grader_config=backend.grader_config,
            code_dir=target.rollout_dir,
            solution=request.solution,
            image=request.image or DEFAULT_IMAGE,
            bake_dependencies=request.bake_dependencies,
            name=request.name or target.rollout_dir.name.lower(),
        )
    except (ConfigurationError, ValueError, KeyError) as exc:
        raise CLIError(CLIErrorCode.VALIDATION, str(exc)) from exc
