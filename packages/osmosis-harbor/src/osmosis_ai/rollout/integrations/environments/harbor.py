"""Harbor registry datasets as osmosis rollouts: ``harbor:org/name@ref[?KEY=VALUE&...]``.

Installed by ``pip install 'osmosis-ai[harbor]'`` (distribution ``osmosis-harbor``). The dataset
is resolved by Harbor's own registry client (the Harbor registry by default; a local registry
file or folder with ``registry=PATH`` for offline use, or a JSON registry at ``registry_url=``)
and each of its tasks becomes one dataset-mode row that :class:`HarborBackend` runs as a Harbor
trial with the task's own instruction, environment and verifier:

- a registry package ``org/name@digest`` -> ``metadata["harbor_task"]`` (fetched per rollout);
- a task in a git repository -> ``harbor_task`` (its path) + ``git_url`` + ``git_commit_id``;
- a local task -> ``harbor_task_id`` relative to the dataset's folder (a relative path in a local
  registry is read relative to the registry file), with its instruction as the row's prompt
  (what an ``AgentWorkflow`` agent receives; the trial itself uses the task's own file).

Options: ``registry``, ``registry_url``, ``agent`` (``terminus-2`` by default, ``mini-swe-agent``,
``oracle``, ``nop``, or an ``AgentWorkflow`` as ``module:Class``), ``sandbox`` (``local``,
``docker`` or ``skypilot``; default ``OSMOSIS_HARBOR_ENV``), ``concurrency`` (trials at once,
default 4). See ``docs/guides/harbor-registry.md``.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osmosis_ai.errors import ConfigurationError
from osmosis_ai.rollout import AgentWorkflow
from osmosis_ai.rollout.integrations.environments import (
    Environment,
    EnvironmentInfo,
    EnvironmentSpec,
    EnvironmentSpecError,
)

logger = logging.getLogger(__name__)
_OPTIONS = ("registry", "registry_url", "agent", "sandbox", "concurrency")


class HarborNativeAgent(AgentWorkflow[Any]):
    """Stands for a Harbor agent (``terminus-2``, ``oracle``...): it runs only inside a Harbor
    trial, so serve the environment's ``create_app()`` (a :class:`HarborBackend`)."""

    async def run(self, ctx: Any) -> None:
        raise ConfigurationError(
            "A Harbor registry environment runs its agent inside a Harbor trial: serve "
            "environment.create_app() (HarborBackend), not a LocalBackend."
        )


@dataclass(frozen=True, slots=True)
class HarborDatasetEnvironment(Environment):
    """An :class:`Environment` whose backend is a dataset-mode :class:`HarborBackend`."""

    tasks_dir: Path = Path()
    agent: str | type = "terminus-2"
    sandbox: str | None = None
    concurrency: int = 4
    harbor_options: dict[str, Any] = field(default_factory=dict)

    def create_backend(self, **backend_options: Any) -> Any:
        from harbor.models.job.config import RetryConfig
        from harbor.trial.queue import TrialQueue

        from osmosis_ai.rollout.backend.harbor import HarborBackend, TaskMode
        from osmosis_ai.rollout.backend.harbor.environments import environment_config_from_env

        env = None if self.sandbox is None else {**os.environ, "OSMOSIS_HARBOR_ENV": self.sandbox}
        options: dict[str, Any] = {
            "orchestrator": TrialQueue(self.concurrency, retry_config=RetryConfig(max_retries=0)),
            "tasks_dir": self.tasks_dir,
            "task_mode": TaskMode.DATASET,
            "agent": self.agent,
            "environment_config": environment_config_from_env(env),
            **self.harbor_options,
            **backend_options,
        }
        return HarborBackend(**options)


def _agent(value: str) -> str | type:
    if ":" not in value:
        return value  # a Harbor agent name; HarborBackend checks it
    module, _, name = value.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise EnvironmentSpecError(
            f"agent={value!r}: cannot import {name!r} from {module!r} ({exc}). Give a Harbor "
            "agent name (terminus-2, mini-swe-agent, oracle, nop) or an AgentWorkflow as "
            "'module:Class' importable from the current directory."
        ) from exc


def _client(options: dict[str, str]) -> tuple[Any, Path | None]:
    from harbor.registry.client.factory import RegistryClientFactory

    path = options.get("registry")
    if path is None:
        return RegistryClientFactory.create(registry_url=options.get("registry_url")), None
    registry = Path(path).expanduser().resolve()
    if registry.is_dir():
        registry = registry / "registry.json"
    if not registry.is_file():
        raise EnvironmentSpecError(
            f"registry={path!r}: no Harbor registry file there. Point it at a registry.json (a "
            "JSON list of datasets: name, version, description, tasks) or at its folder."
        )
    return RegistryClientFactory.create(registry_path=registry), registry.parent


def _rows(task_ids: Iterable[Any], base: Path | None) -> tuple[Path, list[dict[str, Any]]]:
    from harbor.models.task.id import GitTaskId, LocalTaskId

    local: list[Path] = []
    metas: list[dict[str, Any]] = []
    for task_id in task_ids:
        if isinstance(task_id, LocalTaskId):
            path = task_id.path.expanduser()
            local.append((base / path if base and not path.is_absolute() else path).resolve())
            metas.append({})
        elif isinstance(task_id, GitTaskId):
            meta = {"harbor_task": task_id.path.as_posix(), "git_url": task_id.git_url}
            metas.append(
                {**meta, "git_commit_id": task_id.git_commit_id} if task_id.git_commit_id else meta
            )
        else:
            ref = f"@{task_id.ref}" if task_id.ref else ""
            metas.append({"harbor_task": f"{task_id.org}/{task_id.name}{ref}"})
    root = Path(_common(local)) if local else Path.cwd()
    paths = iter(local)
    rows: list[dict[str, Any]] = []
    for meta in metas:
        if meta:
            rows.append({"metadata": meta})
            continue
        path = next(paths)
        row: dict[str, Any] = {"metadata": {"harbor_task_id": path.relative_to(root).as_posix()}}
        instruction = _instruction(path)
        if instruction:  # the prompt an AgentWorkflow agent gets (and reports show)
            row["messages"] = [{"role": "user", "content": instruction}]
        rows.append(row)
    return root, rows


def _instruction(task_dir: Path) -> str | None:
    """The task's instruction as Harbor reads it (``None`` for a multi-step task)."""
    from harbor.models.task.task import Task

    try:
        return Task(task_dir).instruction.strip() or None
    except Exception as exc:  # a task Harbor cannot read fails when its trial runs, saying why
        logger.debug("no instruction for %s: %s", task_dir, exc)
        return None


def _common(paths: list[Path]) -> str:
    import os.path

    parents = [p.parent for p in paths]
    return os.path.commonpath([str(p) for p in parents])


class HarborRegistrySource:
    """``harbor:org/name@ref`` through Harbor's registry client."""

    def load(self, spec: EnvironmentSpec) -> Environment:
        options = dict(spec.options)
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise EnvironmentSpecError(
                f"Unknown option(s) {', '.join(unknown)} for {spec}; the harbor source takes "
                + ", ".join(_OPTIONS)
                + "."
            )
        if "registry" in options:  # absolute: a rollout server started elsewhere reads the same
            options["registry"] = str(Path(options["registry"]).expanduser().resolve())
            spec = EnvironmentSpec(spec.source, spec.name, options)
        client, base = _client(options)
        try:
            metadata = _run(client.get_dataset_metadata(spec.name))
        except Exception as exc:
            raise EnvironmentSpecError(
                f"Harbor's registry has no dataset {spec.name!r} ({exc}). Name it as "
                "'org/name@ref' (or 'name@version' in a local registry); list them with "
                "`harbor dataset list`."
            ) from exc
        tasks_dir, rows = _rows(metadata.task_ids, base)
        if not rows:
            raise EnvironmentSpecError(f"Harbor dataset {spec.name!r} has no tasks.")
        agent = _agent(options.get("agent", "terminus-2"))
        try:
            concurrency = int(options.get("concurrency", "4"))
        except ValueError:
            concurrency = 0
        if concurrency < 1:
            raise EnvironmentSpecError(f"concurrency must be a positive integer in {spec}.")
        version = f" {metadata.version}" if metadata.version else ""
        return HarborDatasetEnvironment(
            spec=spec,
            workflow=agent if isinstance(agent, type) else HarborNativeAgent,
            grader=None,
            rows=rows,
            description=(metadata.description or f"Harbor dataset {metadata.name}{version}"),
            needs=("sandbox",),
            tasks_dir=tasks_dir,
            agent=agent,
            sandbox=options.get("sandbox"),
            concurrency=concurrency,
        )

    def list(self, registry: str | None = None) -> Iterable[EnvironmentInfo]:
        """The datasets of Harbor's registry (network), or of the local ``registry`` file or
        folder (offline)."""
        client, _ = _client({} if registry is None else {"registry": registry})
        try:
            datasets = _run(client.list_datasets())
        except Exception as exc:
            where = registry or "Harbor's registry"
            raise EnvironmentSpecError(
                f"Could not list the datasets of {where} ({exc}). Offline, list a local "
                "registry instead: registry=PATH (a registry.json or its folder)."
            ) from exc
        return [
            EnvironmentInfo(
                spec=f"harbor:{d.name}" + (f"@{d.version}" if d.version else ""),
                description=d.description,
                rows=d.task_count,
                needs=("sandbox",),
            )
            for d in datasets
        ]


def _run(coro: Any) -> Any:
    """Run one registry call from synchronous code (also from inside a running loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


SOURCE = HarborRegistrySource()
