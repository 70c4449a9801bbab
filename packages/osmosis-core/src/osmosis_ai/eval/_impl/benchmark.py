"""``osmosis benchmark run CONFIG``: a benchmark TOML run locally, agents x tasks, with the
engine of ``osmosis eval run`` (:func:`~osmosis_ai.eval.run_eval`), then a leaderboard.

Tasks are Harbor task folders on disk: ``[tasks] task_set`` (else ``[experiment] benchmark``)
names a folder of them, relative to the config file; ``task_names`` keeps those named (folder
name or ``[task] name``; an entry may also be a task folder path or a registry package
``org/name@ref``), ``categories`` those whose ``task.toml`` says ``[metadata] category``. Each
task becomes one dataset row (its instruction as the prompt, ``metadata.harbor_task`` its
path), so the agent's rollout (a ``HarborBackend`` server) runs it as a real Harbor trial.

An agent is one of the workspace's rollouts (``rollout``/``entrypoint``) and a model
(``[agents.model]``: ``provider`` or ``endpoint``); each agent is one eval run of
``attempts_per_task`` samples per task, under ``<output>/<run name>/evals/``. The leaderboard
is :mod:`.results.leaderboard`; ``benchmark.json`` and ``leaderboard.html`` are written next to
the eval runs.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osmosis_ai.atomic_file import write_atomic
from osmosis_ai.config.benchmark import BenchmarkAgent, BenchmarkConfig
from osmosis_ai.errors import ConfigurationError
from osmosis_ai.eval._impl.results.leaderboard import (
    CI_METHOD,
    TIE_RULE,
    AgentScore,
    TaskOutcome,
    build_leaderboard,
)

__all__ = ["BenchmarkRun", "BenchmarkRunError", "BenchmarkTask", "run_benchmark", "select_tasks"]

REGISTRY_REF = re.compile(r"^[\w.-]+/[\w.-]+@[\w.-]+$")


class BenchmarkRunError(ConfigurationError):
    """The benchmark cannot run locally (no tasks, an agent that is not a rollout...)."""


@dataclass(frozen=True, slots=True)
class BenchmarkTask:
    name: str
    ref: str  # a task folder's absolute path, or a registry package
    instruction: str


@dataclass(slots=True)
class BenchmarkRun:
    name: str
    benchmark: str
    run_dir: Path
    tasks: list[BenchmarkTask]
    attempts_per_task: int
    leaderboard: list[AgentScore]
    eval_runs: dict[str, Path] = field(default_factory=dict)
    html_path: Path | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "benchmark": self.benchmark,
            "run_dir": str(self.run_dir),
            "tasks": [t.name for t in self.tasks],
            "attempts_per_task": self.attempts_per_task,
            "ci_method": CI_METHOD,
            "tie_rule": TIE_RULE,
            "leaderboard": [s.as_dict() for s in self.leaderboard],
            "eval_runs": {agent: str(path) for agent, path in self.eval_runs.items()},
            "html": str(self.html_path) if self.html_path else None,
        }


def _task_toml(folder: Path) -> dict[str, Any]:
    try:
        return tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def _local_task(folder: Path) -> BenchmarkTask:
    meta = _task_toml(folder)
    name = str((meta.get("task") or {}).get("name") or folder.name)
    try:
        instruction = (folder / "instruction.md").read_text(encoding="utf-8").strip()
    except OSError:
        instruction = ""
    return BenchmarkTask(name, str(folder.resolve()), instruction or f"Solve the task {name}.")


def select_tasks(config: BenchmarkConfig, base: Path) -> list[BenchmarkTask]:
    """The Harbor tasks the config selects, sorted by name; see the module docstring."""
    tasks_cfg = config.tasks
    source = tasks_cfg.task_set or config.experiment.benchmark
    folder = (base / source).expanduser()
    found: list[BenchmarkTask] = []
    categories: dict[str, str] = {}
    if folder.is_dir():
        for child in sorted(folder.iterdir()):
            if child.is_dir() and (child / "task.toml").is_file():
                task = _local_task(child)
                found.append(task)
                meta = _task_toml(child).get("metadata") or {}
                categories[task.ref] = str(meta.get("category") or "")
    elif tasks_cfg.task_set is not None or not tasks_cfg.task_names:
        what = "[tasks] task_set" if tasks_cfg.task_set else "[experiment] benchmark"
        raise BenchmarkRunError(
            f"{what} = {source!r}: no folder {folder} to take Harbor tasks from. A local "
            "benchmark run needs its tasks on disk: set [tasks] task_set to a folder of Harbor "
            "task folders (each with a task.toml), relative to the config, or list task_names "
            'as task folder paths or registry packages ("org/name@ref").'
        )
    if tasks_cfg.task_names:
        wanted: list[BenchmarkTask] = []
        for name in tasks_cfg.task_names:
            match = [t for t in found if name in (t.name, Path(t.ref).name)]
            path = (base / name).expanduser()
            if match:
                wanted.extend(match)
            elif path.is_dir() and (path / "task.toml").is_file():
                wanted.append(_local_task(path))
            elif REGISTRY_REF.match(name):
                wanted.append(BenchmarkTask(name, name, f"Solve the task {name}."))
            else:
                known = ", ".join(t.name for t in found[:10]) or "none"
                raise BenchmarkRunError(
                    f"[tasks] task_names: {name!r} is not a task of {folder} (tasks: {known}), "
                    "a task folder, or a registry package 'org/name@ref'."
                )
        found = list({t.ref: t for t in wanted}.values())
    if tasks_cfg.categories:
        found = [t for t in found if categories.get(t.ref) in tasks_cfg.categories]
    if not found:
        raise BenchmarkRunError(
            f"No Harbor task selected from {folder}: check [tasks] (a task folder holds "
            "task.toml, instruction.md and environment/Dockerfile)."
        )
    return sorted(found, key=lambda t: t.name)


def _find_workspace(start: Path) -> Path:
    for folder in [start, *start.parents]:
        if (folder / "rollouts").is_dir():
            return folder
    raise BenchmarkRunError(
        f"No workspace (a folder with rollouts/) above {start}: keep the benchmark config in "
        "the workspace (configs/benchmark/<name>.toml)."
    )


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:60] or "agent"


def _eval_options(
    agent: BenchmarkAgent,
    config: BenchmarkConfig,
    secrets: Mapping[str, str],
    *,
    dataset: Path,
    name: str,
    output_dir: Path,
) -> Any:
    from osmosis_ai.eval._impl.plan.options import EvalOptions

    model = agent.model
    api_key = secrets.get(model.api_key_secret) if model.api_key_secret else None
    env = {**config.env, **agent.env}
    for name_ in [*config.verifier.required, *config.secrets.required]:
        if name_ in secrets:
            env[name_] = secrets[name_]
    execution = config.execution
    return EvalOptions(
        dataset=dataset,
        model=model.model,
        base_url=model.base_url if model.type == "endpoint" else None,
        api_key=api_key,
        api_key_env=None if api_key else model.api_key_secret,
        n=execution.attempts_per_task,
        name=name,
        output_dir=output_dir,
        max_in_flight=execution.max_concurrent_attempts,
        pass_threshold=execution.pass_threshold,
        env=env,
    )


def _check_agents(config: BenchmarkConfig, workspace: Path) -> None:
    """Every agent names a rollout whose entrypoint exists (locally an agent is a rollout)."""
    for index, agent in enumerate(config.agents):
        if agent.rollout is None:
            raise BenchmarkRunError(
                f"agents[{index}] ({agent.label(index)}): locally an agent is one of your "
                'rollouts: add rollout = "<folder under rollouts/>" (and entrypoint if not '
                "main.py). The harness runs only on the platform (osmosis benchmark submit)."
            )
        if agent.model.type == "hosted":
            raise BenchmarkRunError(
                f"agents[{index}] ({agent.label(index)}): a hosted model runs only on the "
                'platform (osmosis benchmark submit); locally use type = "provider" or '
                '"endpoint".'
            )
        entry = workspace / "rollouts" / agent.rollout / agent.entrypoint
        if not entry.is_file():
            raise BenchmarkRunError(
                f"agents[{index}]: {entry} does not exist; rollout names a folder under "
                f"{workspace / 'rollouts'} and entrypoint a file in it."
            )


def _outcomes(
    rows: Sequence[Any], tasks: list[BenchmarkTask], threshold: float
) -> list[TaskOutcome]:
    """Per task: attempts (skipped ones excluded), passes (reward >= threshold), errors."""
    per_task: dict[int, list[Any]] = {}
    for row in rows:
        per_task.setdefault(row.source_row_index, []).append(row)
    return [
        TaskOutcome(
            task.name,
            attempts=sum(1 for r in per_task.get(i, []) if r.status != "skipped"),
            passed=sum(
                1
                for r in per_task.get(i, [])
                if r.status == "success" and r.reward is not None and r.reward >= threshold
            ),
            errors=sum(1 for r in per_task.get(i, []) if r.status == "failed"),
        )
        for i, task in enumerate(tasks)
    ]


def run_benchmark(
    config: BenchmarkConfig,
    *,
    name: str | None = None,
    output_dir: Path | None = None,
    secrets: Mapping[str, str] | None = None,
    on_agent: Callable[[str, int, int], None] | None = None,
) -> BenchmarkRun:
    """Run every agent of ``config`` over its tasks and rank them; see the module docstring.

    ``secrets`` are the values of ``config.required_secrets`` (model keys, verifier and
    ``[secrets]`` names): they reach the model client and the rollouts' environment, never a
    file. ``on_agent(label, index, count)`` is called before each agent's eval run.
    """
    from osmosis_ai.eval._impl.api import run_eval

    if config.source_path is None:
        raise BenchmarkRunError("run_benchmark needs a config loaded from a file")
    base = config.source_path.resolve().parent
    workspace = _find_workspace(base)
    _check_agents(config, workspace)
    tasks = select_tasks(config, base)
    run_name = name or f"{config.source_path.stem}-{_slug(config.experiment.benchmark)}"
    root = (output_dir or workspace / ".osmosis" / "benchmarks") / run_name
    root.mkdir(parents=True, exist_ok=True)
    dataset = root / "tasks.jsonl"
    lines = [
        json.dumps(
            {"user_prompt": t.instruction, "metadata": {"harbor_task": t.ref, "task": t.name}}
        )
        for t in tasks
    ]
    write_atomic(dataset, "\n".join(lines) + "\n")
    outcomes: dict[str, list[TaskOutcome]] = {}
    extra: dict[str, dict[str, Any]] = {}
    eval_runs: dict[str, Path] = {}
    threshold = config.execution.pass_threshold
    for index, agent in enumerate(config.agents):
        label = agent.label(index)
        if on_agent is not None:
            on_agent(label, index, len(config.agents))
        options = _eval_options(
            agent, config, secrets or {}, dataset=dataset,
            name=f"{index + 1:02d}-{_slug(label)}", output_dir=root / "evals",
        )  # fmt: skip
        entry = workspace / "rollouts" / str(agent.rollout) / agent.entrypoint
        run = run_eval(entry, options)
        for _ in range(config.execution.max_retries):
            if not run.failed:
                break
            options.retry_failed = True
            run = run_eval(entry, options)
        eval_runs[label] = run.run_dir
        outcomes[label] = _outcomes(run.rows, tasks, threshold)
        extra[label] = {
            "rollout": agent.rollout,
            "model": agent.model.model,
            "eval_run": run.run_name,
            "status": run.status,
        }
    result = BenchmarkRun(
        name=run_name,
        benchmark=config.experiment.benchmark,
        run_dir=root,
        tasks=tasks,
        attempts_per_task=config.execution.attempts_per_task,
        leaderboard=build_leaderboard(outcomes, extra),
        eval_runs=eval_runs,
    )
    from osmosis_ai.eval._impl.report.benchmark_page import render_leaderboard_page

    result.html_path = root / "leaderboard.html"
    write_atomic(result.html_path, render_leaderboard_page(result.as_dict()))
    write_atomic(root / "benchmark.json", json.dumps(result.as_dict(), indent=2) + "\n")
    return result
