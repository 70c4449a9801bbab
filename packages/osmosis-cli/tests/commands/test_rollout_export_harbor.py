"""``osmosis rollout export-harbor``: the rollout's LocalBackend grader becomes the verifier of
Harbor tasks written from a dataset; Harbor loads them and an oracle trial scores the reference
answer 1.0 (real Harbor, Docker-free local sandbox)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_harness import RunCli  # pyright: ignore[reportMissingImports]

pytest.importorskip("harbor", reason="osmosis-harbor's extra is not installed")

RolloutFactory = Callable[..., Path]

ROLLOUT = """
from osmosis_ai.rollout import AgentWorkflow, Grader, LocalBackend
from osmosis_ai.rollout.server import create_rollout_server


class Echo(AgentWorkflow):
    async def run(self, ctx):
        return list(ctx.prompt)


class Exact(Grader):
    async def grade(self, ctx):
        answer = str(ctx.sample.messages[-1].get("content") or "")
        ctx.set_reward(1.0 if answer == f"ANSWER: {ctx.label}" else 0.0)


app = create_rollout_server(backend=LocalBackend(workflow=Echo, grader=Exact))
"""


def _dataset(path: Path) -> Path:
    rows = [
        {"user_prompt": "What is 6 * 7?", "ground_truth": "42"},
        {"user_prompt": "What is 2 + 2?", "ground_truth": "4"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


async def _oracle_reward(task_dir: Path, trials: Path) -> float:
    from harbor.models.job.config import RetryConfig
    from harbor.models.trial.config import AgentConfig, TaskConfig, TrialConfig
    from harbor.trial.queue import TrialQueue

    from osmosis_ai.rollout.backend.harbor import local_environment_config

    queue = TrialQueue(1, retry_config=RetryConfig(max_retries=0))
    result = await queue.submit(
        TrialConfig(
            task=TaskConfig(path=task_dir),
            agent=AgentConfig(name="oracle"),
            environment=local_environment_config(),
            trials_dir=trials,
        )
    )
    assert result.exception_info is None, result.exception_info
    assert result.verifier_result is not None
    assert result.verifier_result.rewards is not None
    return float(result.verifier_result.rewards["reward"])


async def test_export_harbor_writes_tasks_harbor_runs(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory, tmp_path: Path
) -> None:
    from harbor.models.task.task import Task

    rollout_factory(git_repo, "exact", ROLLOUT, dependencies=["osmosis-core"])
    dataset = _dataset(git_repo / "data" / "rows.jsonl")
    out = tmp_path / "tasks"
    result = run_cli(
        "--json", "rollout", "export-harbor", "rollouts/exact", "--dataset", str(dataset),
        "-o", str(out), "--solution", "ANSWER: {label}", "--no-bake-dependencies",
        cwd=git_repo,
    )  # fmt: skip
    assert result.code == 0, result.stderr
    envelope = result.envelope()
    assert envelope["operation"] == "rollout.export-harbor"
    assert envelope["resource"]["tasks"] == ["exact-0000", "exact-0001"]
    assert Task(out / "exact-0001").instruction.strip() == "What is 2 + 2?"
    assert await _oracle_reward(out / "exact-0000", tmp_path / "trials") == 1.0


def test_export_harbor_needs_a_grader_and_an_empty_directory(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory, tmp_path: Path
) -> None:
    rollout_factory(
        git_repo, "nograder", ROLLOUT.replace(", grader=Exact", ""), dependencies=["osmosis-core"]
    )
    dataset = _dataset(git_repo / "data" / "rows.jsonl")
    args = ("--json", "rollout", "export-harbor", "--dataset", str(dataset), "-o")
    result = run_cli(*args, str(tmp_path / "a"), "rollouts/nograder", cwd=git_repo)
    assert result.code == 1
    assert result.error()["error"]["code"] == "VALIDATION"
    assert "has no grader" in result.error()["error"]["message"]
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    rollout_factory(git_repo, "exact", ROLLOUT, dependencies=["osmosis-core"])
    result = run_cli(*args, str(tmp_path / "full"), "rollouts/exact", cwd=git_repo)
    assert result.code == 1
    assert "not empty" in result.error()["error"]["message"]
