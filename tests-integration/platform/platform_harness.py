"""Types shared by the stand-in platform tests (a uniquely named module, not ``conftest``, so
it never collides with other test folders' conftest modules on ``sys.path``)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stand_in import PlatformState


@dataclass
class Platform:
    url: str
    state: PlatformState
    token: str


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def envelope(self) -> dict[str, Any]:
        return json.loads(self.stdout)

    def error(self) -> dict[str, Any]:
        return json.loads(self.stderr.strip().splitlines()[-1])


@dataclass
class Cli:
    home: Path
    env: dict[str, str]

    def __call__(self, *args: str, cwd: Path, stdin: str | None = None) -> CliResult:
        completed = subprocess.run(
            [sys.executable, "-m", "osmosis_cli", *args],
            cwd=cwd,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return CliResult(completed.returncode, completed.stdout, completed.stderr)

    def popen(self, *args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start the CLI without waiting (for ``--follow``, kills and memory measurements)."""
        return subprocess.Popen(
            [sys.executable, "-m", "osmosis_cli", *args],
            cwd=cwd,
            env=env or self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
