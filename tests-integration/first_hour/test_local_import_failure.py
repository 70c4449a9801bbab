"""Item 2: a missing module is a failure for validate and eval run (exit 1, module named)."""

from __future__ import annotations

from pathlib import Path

from eval_support import Cli, write_tiny_workspace


def _typo_workspace(root: Path) -> Path:
    config = write_tiny_workspace(root, n_rows=2, mode="noop")
    main = root / "rollouts" / "tiny" / "main.py"
    main.write_text(main.read_text().replace("import httpx\n", "import httpx\nimport numpyy\n", 1))
    return config


def test_validate_fails_naming_the_missing_module(tmp_path: Path, cli: Cli) -> None:
    config = _typo_workspace(tmp_path)
    result = cli.run("--json", "rollout", "validate", str(config), cwd=tmp_path)
    assert result.code == 1
    error = result.error()
    assert error["code"] == "VALIDATION"
    assert "No module named 'numpyy'" in error["message"]
    assert "module 'numpyy' is not installed in this environment" in error["message"]
    assert error["details"]["missing_module"] == "numpyy"


def test_eval_run_fails_naming_the_missing_module(tmp_path: Path, cli: Cli) -> None:
    config = _typo_workspace(tmp_path)
    result = cli.run("--plain", "eval", "run", str(config), "--model", "mock", cwd=tmp_path)
    assert result.code == 1
    main = tmp_path / "rollouts" / "tiny" / "main.py"
    line = main.read_text().splitlines().index("import numpyy") + 1
    assert f"importing main.py failed: {main}:{line}: No module named 'numpyy'" in result.stderr
    # The server's traceback starts at the rollout's own code, not in the loader or importlib.
    assert "importlib" not in result.stderr
    assert f'File "{main}", line {line}' in result.stderr
