"""``export_harbor_tasks``: an osmosis rollout + dataset written as Harbor task folders, loaded by
Harbor's own task loader and run as real Harbor trials (oracle and nop) in the local sandbox."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from harbor.models.task.task import Task
from harbor.models.trial.config import AgentConfig, TaskConfig, TrialConfig
from harbor.trial.queue import TrialQueue

from osmosis_ai.errors import ConfigurationError
from osmosis_ai.rollout.backend.harbor import local_environment_config
from osmosis_ai.rollout.backend.harbor.export import HarborTaskRow, export_harbor_tasks
from osmosis_ai.rollout.context import GraderContext
from osmosis_ai.rollout.types.sample import RolloutSample

ROWS = [
    HarborTaskRow([{"role": "user", "content": "What is 6 * 7?"}], "42", {"topic": "x"}),
    HarborTaskRow([{"role": "user", "content": "What is 3 * 4?"}], "12"),
]


async def _trial_reward(queue: TrialQueue, task_dir: Path, agent: str, trials: Path) -> float:
    config = TrialConfig(
        task=TaskConfig(path=task_dir),
        agent=AgentConfig(name=agent),
        environment=local_environment_config(),
        trials_dir=trials,
    )
    result = await queue.submit(config)
    assert result.exception_info is None, result.exception_info
    assert result.verifier_result is not None
    assert result.verifier_result.rewards is not None
    return float(result.verifier_result.rewards["reward"])


async def _grader_reward(project: Any, row: HarborTaskRow, answer: str | None) -> float:
    """What the rollout's grader gives ``answer`` (``None``: no answer at all), called directly."""
    reply = [] if answer is None else [{"role": "assistant", "content": answer}]
    sample = RolloutSample(messages=[*row.initial_messages, *reply])
    ctx = GraderContext(label=row.label, sample=sample, metadata=row.metadata)
    await project.MultiplyGrader().grade(ctx)
    assert sample.reward is not None
    return sample.reward


async def test_exported_tasks_load_in_harbor_and_the_reference_scores_one(
    queue: TrialQueue, multiply_project: ModuleType, tmp_path: Path
) -> None:
    out = tmp_path / "exported"
    tasks = export_harbor_tasks(
        ROWS,
        out,
        workflow=multiply_project.MultiplyWorkflow,  # type: ignore[attr-defined]
        workflow_config=multiply_project.CONFIG,  # type: ignore[attr-defined]
        grader=multiply_project.MultiplyGrader,  # type: ignore[attr-defined]
        solution="#### {label}",
        name="multiply",
        # The local sandbox runs no networked RUN step; the host has the dependencies.
        bake_dependencies=False,
    )
    assert [t.name for t in tasks] == ["multiply-0000", "multiply-0001"]
    loaded = Task(tasks[0])  # Harbor's own loader
    assert loaded.instruction.strip() == "What is 6 * 7?"
    assert loaded.config.task is not None
    assert loaded.config.task.name == "osmosis/multiply-0000"
    toml = tomllib.loads((tasks[0] / "task.toml").read_text())
    assert toml["metadata"]["osmosis"] == {
        "row": 0,
        "label": "42",
        "metadata_json": '{"topic": "x"}',
    }
    assert "osmosis_bundle_" in (tasks[0] / "tests" / "test.sh").read_text()

    trials = tmp_path / "trials"
    *oracle, nop = await asyncio.gather(
        *(_trial_reward(queue, task_dir, "oracle", trials) for task_dir in tasks),
        _trial_reward(queue, tasks[1], "nop", trials),
    )
    assert oracle == [1.0, 1.0]
    for reward, row in zip(oracle, ROWS, strict=True):
        assert reward == await _grader_reward(multiply_project, row, f"#### {row.label}")
    # Without the agent's answer the grader sees only the prompt: reward 0, as the grader says.
    assert nop == 0.0
    assert nop == await _grader_reward(multiply_project, ROWS[1], None)


def test_the_default_image_bakes_the_project_dependencies(
    multiply_project: ModuleType, tmp_path: Path
) -> None:
    project = Path(str(multiply_project.__file__)).parent
    (project_copy := tmp_path / "project").mkdir()
    (project_copy / "multiply_rollout.py").write_text((project / "multiply_rollout.py").read_text())
    (project_copy / "pyproject.toml").write_text(
        '[project]\nname = "m"\nversion = "0"\ndependencies = ["httpx>=0.27", "osmosis-ai"]\n'
    )
    (task,) = export_harbor_tasks(
        ROWS[:1],
        tmp_path / "out",
        workflow="multiply_rollout:MultiplyWorkflow",
        grader="multiply_rollout:MultiplyGrader",
        code_dir=project_copy,
    )
    assert (task / "environment" / "Dockerfile").read_text() == (
        "FROM python:3.12-slim\n"
        "# The verifier installs the rollout bundle (tests/osmosis/*.whl) with uv; its\n"
        "# dependencies are installed here so grading needs no network.\n"
        'RUN pip install --no-cache-dir "uv" "httpx>=0.27" "osmosis-ai"\n'
        "WORKDIR /app\n"
    )
    assert not (task / "solution").exists()  # no reference answer asked for


def test_export_refuses_a_non_empty_directory_and_bad_names(
    multiply_project: ModuleType, tmp_path: Path
) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    kwargs: dict[str, Any] = {
        "workflow": "multiply_rollout:MultiplyWorkflow",
        "grader": "multiply_rollout:MultiplyGrader",
    }
    with pytest.raises(ConfigurationError, match="not empty"):
        export_harbor_tasks(ROWS, tmp_path / "full", **kwargs)
    with pytest.raises(ConfigurationError, match="lower-case"):
        export_harbor_tasks(ROWS, tmp_path / "new", name="Bad Name", **kwargs)
