"""Item 6: `--name` alone resumes a run with its stored model and selection; the printed resume
command is complete (the config path, no placeholder)."""

from __future__ import annotations

from pathlib import Path

from eval_support import Cli, write_tiny_workspace


def test_name_alone_reuses_the_stored_model_and_selection(tmp_path: Path, cli: Cli) -> None:
    # The config names a real model; the first run overrides it with --model mock and --limit 2.
    config = write_tiny_workspace(tmp_path, n_rows=4, model="openai/gpt-4o-mini")
    first = cli.run(
        "--json", "eval", "run", str(config), "--model", "mock", "--limit", "2",
        "--name", "first", cwd=tmp_path,
    )  # fmt: skip
    assert first.code == 0, first.stderr
    again = cli.run("--json", "eval", "run", str(config), "--name", "first", cwd=tmp_path)
    assert again.code == 0, again.stderr
    resource = again.json()["resource"]
    assert resource["model"] == "mock"
    assert resource["total_work_items"] == 2
    assert (resource["resumed"], resource["dispatched"]) == (2, 0)


def test_explicit_flags_still_win_over_the_stored_request(tmp_path: Path, cli: Cli) -> None:
    config = write_tiny_workspace(tmp_path, n_rows=3, mode="noop")
    first = cli.run(
        "--json", "eval", "run", str(config), "--model", "mock", "--limit", "1",
        "--name", "r", cwd=tmp_path,
    )  # fmt: skip
    assert first.code == 0, first.stderr
    changed = cli.run(
        "--json", "eval", "run", str(config), "--name", "r", "--limit", "2", cwd=tmp_path
    )
    assert changed.code == 1
    error = changed.error()
    assert error["code"] == "CONFLICT"
    assert error["details"]["changed"] == ["dataset"]


def test_partial_run_prints_the_full_resume_command(tmp_path: Path, cli: Cli) -> None:
    rows = [
        {"user_prompt": "What is 2 times 3?", "ground_truth": "6"},
        # the tiny grader raises on a label that is not a number: a failed work item
        {"user_prompt": "What is 4 times 5?", "ground_truth": "twenty"},
    ]
    config = write_tiny_workspace(tmp_path, rows=rows)
    result = cli.run(
        "--json", "eval", "run", str(config), "--model", "mock", "--name", "p", cwd=tmp_path
    )
    assert result.code == 1, result.stderr
    body = result.json()
    assert body["resource"]["failed"] == 1
    expected = f"osmosis eval run {config} --name p --retry-failed"
    assert body["next_steps_structured"] == [{"command": expected}]
    plain = cli.run("--plain", "eval", "run", str(config), "--name", "p", cwd=tmp_path)
    assert plain.code == 1
    assert f"  {expected}" in plain.stdout.splitlines()
