"""Item 1: a dataset without labels is flagged (validate, eval run, --json); `messages` works."""

from __future__ import annotations

import json
from pathlib import Path

from eval_support import Cli, write_tiny_workspace

NO_LABEL_ROWS = [{"user_prompt": f"What is {i} times 3?", "answer": str(i * 3)} for i in range(3)]
EXPECTED = (
    "no row of rows.jsonl has a label: a grader gets label=None and most score 0. "
    "Columns found: answer, user_prompt. Put the expected answer in a 'ground_truth' "
    "(or 'label') column; see docs/dataset-format.md."
)


def test_eval_run_warns_when_no_row_has_a_label(tmp_path: Path, cli: Cli) -> None:
    config = write_tiny_workspace(tmp_path, rows=NO_LABEL_ROWS, mode="noop")

    plain = cli.run("--plain", "eval", "run", str(config), "--model", "mock", cwd=tmp_path)
    assert f"Warning: {EXPECTED}" in plain.stderr

    as_json = cli.run(
        "--json", "eval", "run", str(config), "--model", "mock", "--fresh", cwd=tmp_path
    )
    warnings = [
        json.loads(line)["warning"] for line in as_json.stderr.splitlines() if '"warning"' in line
    ]
    assert {"code": "NO_LABEL", "message": EXPECTED} in warnings


def test_validate_warns_about_unlabelled_dataset(tmp_path: Path, cli: Cli) -> None:
    config = write_tiny_workspace(tmp_path, rows=NO_LABEL_ROWS, mode="noop")
    result = cli.run("--plain", "rollout", "validate", str(config), cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert f"Warning: dataset: {EXPECTED}" in result.stderr


def test_labelled_dataset_gets_no_warning(tmp_path: Path, cli: Cli) -> None:
    config = write_tiny_workspace(tmp_path, n_rows=2, mode="noop")
    result = cli.run("--plain", "eval", "run", str(config), "--model", "mock", cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert "has a label" not in result.stderr


def test_openai_style_messages_column_is_a_prompt(tmp_path: Path, cli: Cli) -> None:
    rows = [
        {
            "messages": [
                {"role": "system", "content": "Use the multiply tool."},
                {"role": "user", "content": f"What is {i + 2} times {i + 3}?"},
            ],
            "ground_truth": str((i + 2) * (i + 3)),
        }
        for i in range(2)
    ]
    config = write_tiny_workspace(tmp_path, rows=rows)
    result = cli.run("--json", "eval", "run", str(config), "--model", "mock", cwd=tmp_path)
    assert result.code == 0, result.stderr
    resource = result.json()["resource"]
    assert resource["succeeded"] == 2
    assert resource["metrics"]["reward_stats"]["mean"] == 1.0
