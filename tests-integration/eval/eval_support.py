"""Helpers for the eval end-to-end tests: run the CLI, write workspaces, read run folders."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
OSMOSIS = str(Path(sys.executable).with_name("osmosis"))


def _load_tiny_rollout() -> Any:
    name = "eval_e2e_tiny_rollout"
    if name in sys.modules:
        return sys.modules[name]
    path = REPO / "packages" / "osmosis-core" / "tests" / "eval" / "tiny_rollout.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


#: ``write_workspace(root, n_rows=..., mode=..., env=..., evaluation=...)`` -> eval config path
write_tiny_workspace = _load_tiny_rollout().write_workspace


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        """The JSON document on stdout; when there is none, the failure shows the exit code and
        stderr (what went wrong) rather than a bare ``JSONDecodeError``."""
        assert self.stdout.strip(), f"no JSON on stdout (exit code {self.code}):\n{self.stderr}"
        return json.loads(self.stdout)

    def error(self) -> dict[str, Any]:
        lines = [line for line in self.stderr.splitlines() if '"error"' in line]
        assert lines, self.stderr
        return json.loads(lines[-1])["error"]


@dataclass
class Cli:
    home: Path

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {**os.environ, "OSMOSIS_HOME": str(self.home), "NO_COLOR": "1"}
        env.update(extra or {})
        return env

    def run(
        self, *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 180
    ) -> CliResult:
        done = subprocess.run(
            [OSMOSIS, *args],
            cwd=cwd,
            env=self.env(env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return CliResult(done.returncode, done.stdout, done.stderr)

    def popen(
        self, *args: str, cwd: Path, env: dict[str, str] | None = None
    ) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [OSMOSIS, *args],
            cwd=cwd,
            env=self.env(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def server_pid(run_dir: Path) -> int | None:
    """The rollout server's pid, from the run log."""
    for line in (run_dir / "logs.txt").read_text().splitlines():
        if "rollout server healthy" in line:
            return int(json.loads(line[line.index("{") :])["pid"])
    return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is gone for our purposes once it is not running.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"
