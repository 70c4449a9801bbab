"""Environments from other ecosystems (issue 41) against the real model: a Reasoning Gym
generator and a verifiers tool environment through ``osmosis eval run --env --model local``.
The 135M model rarely answers right; what is tested is that no row fails for infrastructure
reasons and that every reward function is reported."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from eval_support import Cli, read_jsonl

VERIFIERS_TOOL_ENV = '''
import verifiers as vf
from datasets import Dataset


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def load_environment():
    rows = [{"question": f"What is {a} times {b}? Use the tool.", "answer": str(a * b)}
            for a, b in ((6, 7), (3, 5), (12, 4))]

    def correct(completion, answer, **kwargs) -> float:
        last = completion[-1]
        text = last.get("content") if isinstance(last, dict) else last.content
        return 1.0 if answer in str(text or "") else 0.0

    def brief(completion, **kwargs) -> float:
        return 1.0 if len(completion) <= 3 else 0.0

    return vf.ToolEnv(dataset=Dataset.from_list(rows), tools=[multiply], max_turns=3,
                      rubric=vf.Rubric(funcs=[correct, brief], weights=[1.0, 0.1]))
'''


def _run(cli: Cli, root: Path, spec: str, name: str) -> dict[str, Any]:
    result = cli.run(
        "eval", "run", "--env", spec, "--model", "local", "--limit", "3", "--name", name,
        "--model-arg", "max_tokens=96", "--json", cwd=root, timeout=600,
    )  # fmt: skip
    assert result.code in (0, 1), result.stderr[-4000:]
    return result.json()["resource"]


@pytest.mark.parametrize(
    ("spec", "metrics"),
    [
        ("reasoning-gym:leg_counting?size=3&seed=1", {"score", "answered"}),
        ("verifiers:real_tool_env", {"correct", "brief"}),
    ],
)
def test_an_environment_runs_on_the_real_model_without_infrastructure_failures(
    cli: Cli, tmp_path: Path, spec: str, metrics: set[str]
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "real_tool_env.py").write_text(textwrap.dedent(VERIFIERS_TOOL_ENV))
    name = spec.partition(":")[0]
    resource = _run(cli, root, spec, name)
    assert resource["total_work_items"] == 3
    assert resource["metrics"]["infrastructure_failures"] == 0
    rows = read_jsonl(root / ".osmosis" / "evals" / name / "index.jsonl")
    assert [r["status"] for r in rows] == ["success"] * 3, [r["error_message"] for r in rows]
    assert metrics <= set(resource["metrics"]["grader_metrics"])
