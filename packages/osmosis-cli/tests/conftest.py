"""Shared fixtures: an isolated home for every test, and an in-process CLI runner.

The runner calls :func:`osmosis_cli.main.run` (the console script's body) with captured stdout
and stderr, so a test sees exactly the exit code and output a user would, without paying for a
new interpreter per invocation.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# pytest runs with --import-mode=importlib: make cli_harness importable by the test modules.
sys.path.insert(0, str(Path(__file__).parent))

from cli_harness import Result, RunCli, write_rollout


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("osmosis-home")
    monkeypatch.setenv("OSMOSIS_HOME", str(home))
    monkeypatch.setenv("OSMOSIS_KEYRING", "0")
    monkeypatch.setenv("NO_COLOR", "1")
    for name in ("OSMOSIS_TOKEN", "OSMOSIS_PLATFORM_URL", "OSMOSIS_CONFIG_DIR", "OSMOSIS_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> RunCli:
    from osmosis_cli.main import run

    def invoke(*args: str, cwd: Path | None = None) -> Result:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        capsys.readouterr()
        code = run(list(args))
        out = capsys.readouterr()
        return Result(code, out.out, out.err)

    return invoke


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """An empty git repository (the usual workspace)."""
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.fixture
def rollout_factory() -> Callable[..., Path]:
    return write_rollout


__all__ = ["Result"]
