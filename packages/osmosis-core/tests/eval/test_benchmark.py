"""``run_benchmark`` (what ``osmosis benchmark run`` renders): task selection from Harbor task
folders, one eval run per agent, the leaderboard and its files. The agents here are the tiny
LocalBackend rollout (``TINY_MODE`` per agent via ``[agents.env]``); real Harbor trials are in
``tests-integration/eval/test_benchmark_run.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from osmosis_ai.config import load_benchmark_config
from osmosis_ai.eval import BenchmarkRunError, run_benchmark
from osmosis_ai.eval._impl.benchmark import select_tasks

from .tiny_rollout import write_workspace


def _task(root: Path, name: str, category: str = "words") -> None:
    (root / "environment").mkdir(parents=True)
    (root / "environment" / "Dockerfile").write_text("FROM python:3.12-slim\n")
    (root / "task.toml").write_text(
        f'[task]\nname = "bench/{name}"\n\n[metadata]\ncategory = "{category}"\n'
    )
    (root / "instruction.md").write_text(f"Do {name}.\n")


def _config(ws: Path, tasks: str, agents: str, execution: str = "attempts_per_task = 2") -> Path:
    path = ws / "configs" / "benchmark" / "b.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'[experiment]\nbenchmark = "tiny"\n\n[tasks]\n{tasks}\n\n[execution]\n{execution}\n'
        + agents
    )
    return path


def _agent(name: str, mode: str, rollout: str = "tiny") -> str:
    return (
        f'\n[[agents]]\nname = "{name}"\nrollout = "{rollout}"\n\n[agents.model]\n'
        'type = "provider"\nmodel = "mock"\napi_key_secret = "MOCK_KEY"\n\n'
        f'[agents.env]\nTINY_MODE = "{mode}"\n'
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write_workspace(root)
    for name, category in (("t1", "words"), ("t2", "words"), ("t3", "maths")):
        _task(root / "tasks" / name, name, category)
    return root


def test_task_selection_by_folder_names_categories_and_refs(ws: Path) -> None:
    def names(tasks: str) -> list[str]:
        config = load_benchmark_config(_config(ws, tasks, _agent("a", "noop")))
        return [t.name for t in select_tasks(config, config.source_path.parent)]  # type: ignore[union-attr]

    assert names('task_set = "../../tasks"') == ["bench/t1", "bench/t2", "bench/t3"]
    assert names('task_set = "../../tasks"\ncategories = ["maths"]') == ["bench/t3"]
    # no task_set: [experiment] benchmark names the folder; task_names pick by either name
    (ws / "configs" / "benchmark" / "tiny").symlink_to(ws / "tasks")
    assert names('task_names = ["t2", "bench/t1"]') == ["bench/t1", "bench/t2"]
    assert names('task_names = ["../../tasks/t3", "org/task@v1"]') == ["bench/t3", "org/task@v1"]
    with pytest.raises(BenchmarkRunError, match="'t9' is not a task of"):
        names('task_names = ["t9"]')
    with pytest.raises(BenchmarkRunError, match="set \\[tasks\\] task_set to a folder"):
        names('task_set = "parity"')
    with pytest.raises(BenchmarkRunError, match="No Harbor task selected"):
        names('task_set = "../../tasks"\ncategories = ["poetry"]')


def test_two_agents_are_ranked_and_the_files_written(ws: Path) -> None:
    config = load_benchmark_config(
        _config(
            ws,
            'task_set = "../../tasks"',
            _agent("good", "noop") + _agent("bad", "slow"),
            "attempts_per_task = 2\npass_threshold = 0.5",
        )
    )
    seen: list[tuple[str, int, int]] = []
    run = run_benchmark(
        config, name="b1", secrets={"MOCK_KEY": "x"}, on_agent=lambda *a: seen.append(a)
    )
    assert seen == [("good", 0, 2), ("bad", 1, 2)]
    good, bad = run.leaderboard
    assert (good.agent, good.rank, good.pass_at_1, good.attempts) == ("good", 1, 1.0, 6)
    # `slow` is `multiply` after a pause: no label in a benchmark row, so never a pass
    assert (bad.agent, bad.passed, bad.attempts, bad.rank, bad.tied) == ("bad", 0, 6, 2, False)
    assert run.run_dir == ws / ".osmosis" / "benchmarks" / "b1"
    rows = [json.loads(line) for line in (run.run_dir / "tasks.jsonl").read_text().splitlines()]
    assert rows[0] == {"user_prompt": "Do t1.",
                       "metadata": {"harbor_task": str((ws / "tasks" / "t1").resolve()),
                                    "task": "bench/t1"}}  # fmt: skip
    saved = json.loads((run.run_dir / "benchmark.json").read_text())
    assert saved == run.as_dict()
    assert saved["ci_method"] == "wilson"
    assert set(run.eval_runs) == {"good", "bad"}
    assert all((path / "manifest.json").is_file() for path in run.eval_runs.values())
    page = (run.run_dir / "leaderboard.html").read_text()
    assert "<td>6 / 6</td>" in page
    assert "<td>0 / 6</td>" in page


def test_agents_that_cannot_run_locally_are_refused_before_anything_runs(ws: Path) -> None:
    harness = _agent("h", "noop").replace('rollout = "tiny"', 'harness = "codex"')
    with pytest.raises(BenchmarkRunError, match='add rollout = "<folder under rollouts/>"'):
        run_benchmark(load_benchmark_config(_config(ws, 'task_set = "../../tasks"', harness)))
    missing = _agent("m", "noop", rollout="nope")
    with pytest.raises(BenchmarkRunError, match="does not exist"):
        run_benchmark(load_benchmark_config(_config(ws, 'task_set = "../../tasks"', missing)))
    hosted = (
        '\n[[agents]]\nname = "lora"\nrollout = "tiny"\n\n[agents.model]\ntype = "hosted"\n'
        'base_model = "Qwen/Qwen3-8B"\nlora_model_name = "calc-step-40"\n'
    )
    with pytest.raises(BenchmarkRunError, match="runs only on the platform"):
        run_benchmark(load_benchmark_config(_config(ws, 'task_set = "../../tasks"', hosted)))
    assert not (ws / ".osmosis" / "benchmarks").exists()  # refused before anything ran
