"""What the eval, fleet and workers benchmarks share: the scripted policy server in its own
process, and the tiny rollout the eval tests use (imported by path: it is not a package)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def load_tiny_rollout() -> Any:
    path = REPO / "packages" / "osmosis-core" / "tests" / "eval" / "tiny_rollout.py"
    spec = importlib.util.spec_from_file_location("bench_tiny_rollout", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def start_scripted_policy(policy: str = "instant") -> tuple[subprocess.Popen[str], str]:
    """Start ``python -m osmosis_ai.testing.policy_server --policy POLICY``; return it and its URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "osmosis_ai.testing.policy_server", "--policy", policy],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise SystemExit(f"the scripted policy server did not start (printed {url!r})")
    return proc, url
