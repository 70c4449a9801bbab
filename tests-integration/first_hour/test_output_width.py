"""Item 14: output that is not going to a terminal is never wrapped at 80 columns."""

from __future__ import annotations

from pathlib import Path

from eval_support import Cli, write_tiny_workspace


def test_rich_output_in_a_pipe_keeps_long_lines_whole(tmp_path: Path, cli: Cli) -> None:
    deep = tmp_path / ("a-rather-long-folder-name-" * 4).rstrip("-")
    deep.mkdir()
    config = write_tiny_workspace(deep, n_rows=1, mode="noop")
    env = {"COLUMNS": "", "TERM": "dumb"}
    result = cli.run("eval", "run", str(config), "--model", "mock", cwd=deep, env=env)
    assert result.code == 0, result.stderr + result.stdout
    runs = deep / ".osmosis" / "evals"
    run_dirs = [d for d in runs.iterdir() if (d / "manifest.json").is_file()]
    assert len(run_dirs) == 1
    assert len(f"results: {run_dirs[0]}") > 200
    # the results path is printed whole on one line, however long
    assert f"results: {run_dirs[0]}" in [line.strip() for line in result.stdout.splitlines()]
    mock_warning = (
        "--model mock uses the built-in scripted policy: a plumbing check, its rewards say "
        "nothing about any model."
    )
    assert f"Warning: {mock_warning}" in result.stderr
