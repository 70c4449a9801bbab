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

# Runs the CLI in this interpreter, then writes the process's memory high-water mark.
MEASURED = """
import sys
from osmosis_cli.main import run
code = run(sys.argv[2:])
with open("/proc/self/status") as status:
    hwm = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
with open(sys.argv[1], "w") as out:
    out.write(hwm)
sys.exit(code)
"""

# Runs several CLI invocations (a JSON list of argument lists on stdin) one after the other in
# this interpreter, each with its own captured stdout and stderr; prints [[code, out, err], ...].
SEQUENCE = """
import contextlib, io, json, sys
from osmosis_cli.main import run
results = []
for argv in json.load(sys.stdin):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = run(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    results.append([code, out.getvalue(), err.getvalue()])
sys.stdout.write(json.dumps(results))
"""


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

    def sequence(self, commands: list[tuple[str, ...]], cwd: Path) -> list[CliResult]:
        """Run each of ``commands`` as ``__call__`` would, but one after the other in a single
        child process: one interpreter start-up and CLI import instead of one per command."""
        completed = subprocess.run(
            [sys.executable, "-c", SEQUENCE],
            cwd=cwd,
            env=self.env,
            input=json.dumps([list(c) for c in commands]),
            capture_output=True,
            text=True,
            timeout=60 + 10 * len(commands),
            check=False,
        )
        if completed.returncode != 0:
            raise AssertionError(f"the CLI sequence runner failed:\n{completed.stderr}")
        return [CliResult(code, out, err) for code, out, err in json.loads(completed.stdout)]

    def measured(self, *args: str, cwd: Path) -> tuple[CliResult, float]:
        """Run the CLI and also return its peak resident memory in MiB (Linux ``VmHWM``).

        Read by the CLI process itself at exit: ``ru_maxrss`` of a child would also count the
        parent's pages it borrowed between fork and exec, i.e. this test process's memory.
        """
        report = self.home.parent / f"peak-rss-{len(args)}-{id(args)}.txt"
        completed = subprocess.run(
            [sys.executable, "-c", MEASURED, str(report), *args],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        peak_kib = int(report.read_text(encoding="utf-8"))
        report.unlink()
        return CliResult(completed.returncode, completed.stdout, completed.stderr), peak_kib / 1024

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
