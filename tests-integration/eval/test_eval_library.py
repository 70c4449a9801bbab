"""``osmosis_ai.eval.run_eval`` from Python on a real template (Strands), the scripted policy
playing the model: the library the CLI renders, called as a notebook would."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from eval_support import Cli

from osmosis_ai.eval import EvalUpdate, RowRecord, read_index, run_eval, run_eval_async
from osmosis_ai.testing import ScriptedPolicyServer

TEMPLATE = "multiply-local-strands"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("strands") is None, reason="strands is not installed"
)


def _apply_template(cli: Cli, root: Path) -> Path:
    root.mkdir()
    assert cli.run("init", str(root), cwd=root.parent).code == 0
    applied = cli.run("template", "apply", TEMPLATE, cwd=root)
    assert applied.code == 0, applied.stderr
    return root


def test_run_eval_evaluates_a_template_config(
    cli: Cli, tmp_path: Path, solving_policy: ScriptedPolicyServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OSMOSIS_HOME", str(cli.home))
    ws = _apply_template(cli, tmp_path / "ws")
    updates: list[EvalUpdate] = []
    run = run_eval(
        ws / "configs" / "eval" / f"{TEMPLATE}.toml",
        model="scripted",
        base_url=solving_policy.url,
        limit=3,
        n=2,
        name="lib",
        progress=updates.append,
    )
    assert run.status == "success"
    assert run.run_dir == ws / ".osmosis" / "evals" / "lib"
    assert (run.total_work_items, run.succeeded, run.failed) == (6, 6, 0)
    assert run.mean_reward == 1.0
    assert run.metrics["pass_at_k"][1] == {"k": 2, "value": 1.0, "rows": 3}

    kinds = [u.kind for u in updates]
    assert kinds[0] == "started"
    assert kinds.count("row") == 6
    assert updates[-1].progress.done == 6
    assert updates[-1].progress.policy_calls == 12  # 6 rows x (tool-call turn + answer turn)
    row_updates = [u.row for u in updates if u.row is not None]
    assert {(r.row_index, r.run_index) for r in row_updates} == {
        (r, s) for r in range(3) for s in range(2)
    }

    assert [(r.row_index, r.run_index) for r in run.rows] == [
        (r, s) for r in range(3) for s in range(2)
    ]
    for row in run.rows:
        assert isinstance(row, RowRecord)
        assert row.status == "success"
        assert row.reward == 1.0
        assert row.policy_calls == 2  # the tool-call turn and the answer turn
        assert row.tokens > 0
        assert row.error_type is None
        trajectory = run.trajectory(row)
        assert trajectory is not None
        assert len(trajectory["extra"]["osmosis"]["llm_calls"]) == 2
    # index.jsonl is the same records, in their documented JSON form
    assert read_index(run.run_dir) == run.rows
    first = json.loads((run.run_dir / "index.jsonl").read_text().splitlines()[0])
    assert first["policy_calls"] == 2
    assert first["trajectory_filename"] == "trajectories/row_0_run_0.json"
    # each trajectory is stored once: the server's copy is folded into trajectories/
    assert list((run.run_dir / "rollout_trials").glob("*/trajectory.json")) == []

    again = run_eval(
        ws / "configs" / "eval" / f"{TEMPLATE}.toml",
        model="scripted",
        base_url=solving_policy.url,
        limit=3,
        n=2,
        name="lib",
    )
    assert again.dispatched == 0  # resumed: nothing left to do
    assert all(r.resumed for r in again.rows)


async def test_run_eval_async_takes_a_rollout_folder_dataset_and_model(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OSMOSIS_HOME", str(cli.home))
    ws = _apply_template(cli, tmp_path / "ws")
    dataset = tmp_path / "two.jsonl"
    dataset.write_text(
        json.dumps({"user_prompt": "What is 3 times 4?", "ground_truth": "12"})
        + "\n"
        + json.dumps({"user_prompt": "What is 5 times 6?", "ground_truth": "31"})
        + "\n"
    )
    async with ScriptedPolicyServer("multiply", max_recorded=0) as policy:
        run = await run_eval_async(
            ws / "rollouts" / TEMPLATE,
            dataset=dataset,
            model="scripted",
            base_url=policy.url,
            api_key="not-a-real-key",
            output_dir=tmp_path / "runs",
        )
    assert run.status == "success"
    assert run.run_dir.parent == tmp_path / "runs"
    assert run.run_name.startswith(f"{TEMPLATE}-")
    assert run.rollout == TEMPLATE
    assert [r.reward for r in run.rows] == [1.0, 0.0]  # the second label is wrong on purpose
    assert run.pass_rate == 0.5
    assert "not-a-real-key" not in (run.run_dir / "manifest.json").read_text()


def test_the_docs_example_runs(cli: Cli, tmp_path: Path) -> None:
    """docs/eval-library.md's first Python block, run as written in a template workspace."""
    import re
    import subprocess
    import sys

    docs = Path(__file__).resolve().parents[2] / "docs" / "eval-library.md"
    match = re.search(r"```python\n(.*?)```", docs.read_text(encoding="utf-8"), re.S)
    assert match is not None
    ws = _apply_template(cli, tmp_path / "ws")
    done = subprocess.run(
        [sys.executable, "-c", match.group(1)],
        cwd=ws,
        env=cli.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()[-11:]  # before them: the \r-updated progress line
    assert lines[0] == f"success 1.0 1.0 {ws / '.osmosis' / 'evals' / 'from-python'}"
    assert lines[1:] == [
        f"{row} {sample} success 1.0 2 {line.split()[-1]}"
        for (row, sample), line in zip(
            [(r, s) for r in range(5) for s in range(2)], lines[1:], strict=True
        )
    ]
