"""Item 8: `--limit 0` is an error that says so, not a run over the whole dataset."""

from __future__ import annotations

from pathlib import Path

from eval_support import Cli, write_tiny_workspace


def test_limit_zero_is_an_error(tmp_path: Path, cli: Cli) -> None:
    config = write_tiny_workspace(tmp_path, n_rows=3, mode="noop")
    result = cli.run(
        "--json", "eval", "run", str(config), "--model", "mock", "--limit", "0", cwd=tmp_path
    )
    assert result.code == 1
    error = result.error()
    assert error["code"] == "VALIDATION"
    assert error["message"] == (
        "--limit must be at least 1, got 0; omit --limit to evaluate every row"
    )
    assert not (tmp_path / ".osmosis" / "evals").exists()  # nothing ran, no run folder
