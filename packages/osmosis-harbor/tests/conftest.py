"""Shared fixtures: Harbor tasks on disk, a non-retrying TrialQueue, the local sandbox.

Every trial here is a real Harbor trial (TrialQueue -> Trial -> agent -> Verifier) running in
the Docker-free namespace sandbox; only the environment differs from production.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

# Harbor imports LiteLLM, which otherwise tries to download its model cost map (with retries).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest  # noqa: E402
from harbor.models.job.config import RetryConfig  # noqa: E402
from harbor.trial.queue import TrialQueue  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def osmosis_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "osmosis-home"
    monkeypatch.setenv("OSMOSIS_HOME", str(home))
    monkeypatch.delenv("_OSMOSIS_ROLLOUT_ARTIFACT_ROOT", raising=False)
    return home


@pytest.fixture
def queue() -> TrialQueue:
    return TrialQueue(n_concurrent=4, retry_config=RetryConfig(max_retries=0))


def write_task(
    root: Path,
    *,
    instruction: str = "Create /app/hello.txt containing hello",
    solve: str | None = "echo hello > /app/hello.txt",
    test: str | None = (
        "if grep -q hello /app/hello.txt 2>/dev/null; then echo 1 > /logs/verifier/reward.txt; "
        "else echo 0 > /logs/verifier/reward.txt; fi"
    ),
) -> Path:
    """A minimal Harbor task; ``None`` leaves out the solution or the verifier."""
    (root / "environment").mkdir(parents=True)
    (root / "environment" / "Dockerfile").write_text("FROM python:3.12-slim\nWORKDIR /app\n")
    (root / "task.toml").write_text(
        'schema_version = "1.3"\n\n[environment]\nworkdir = "/app"\n\n'
        "[agent]\ntimeout_sec = 60\n\n[verifier]\ntimeout_sec = 60\n"
    )
    (root / "instruction.md").write_text(instruction + "\n")
    for sub, body in (("solution/solve.sh", solve), ("tests/test.sh", test)):
        if body is None:
            continue
        path = root / sub
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)
    return root


@pytest.fixture
def hello_task(tmp_path: Path) -> Path:
    return write_task(tmp_path / "hello")


@pytest.fixture
def open_task(tmp_path: Path) -> Path:
    """A task with no verifier of its own: the SDK grader decides."""
    return write_task(tmp_path / "multiply", instruction="Multiply.", solve=None, test=None)


@pytest.fixture
def multiply_project() -> Iterator[object]:
    """The fixture rollout project, importable like a user's rollout package."""
    project = FIXTURES / "multiply_project"
    sys.path.insert(0, str(project))
    try:
        import multiply_rollout

        yield multiply_rollout
    finally:
        sys.path.remove(str(project))
