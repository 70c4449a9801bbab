"""Shared fixtures: Harbor tasks on disk, a non-retrying TrialQueue, the local sandbox.

Every trial here is a real Harbor trial (TrialQueue -> Trial -> agent -> Verifier) running in
the Docker-free namespace sandbox; only the environment differs from production.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

# Harbor imports LiteLLM, which otherwise tries to download its model cost map (with retries).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest
from harbor.models.job.config import RetryConfig
from harbor.trial.hooks import TrialEvent, TrialHookEvent
from harbor.trial.queue import TrialQueue

from osmosis_ai.rollout.backend.harbor.backend import HarborBackend, trial_name_for

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def osmosis_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep everything a test writes under its tmp_path: the osmosis home (bundle and task
    caches, artifacts) and the temp dir (backend work dirs, sandbox scratch dirs)."""
    home = tmp_path / "osmosis-home"
    monkeypatch.setenv("OSMOSIS_HOME", str(home))
    monkeypatch.delenv("_OSMOSIS_ROLLOUT_ARTIFACT_ROOT", raising=False)
    # It overrides a test's explicit environment_config (resolve_environment): tests set it.
    monkeypatch.delenv("OSMOSIS_HARBOR_ENV", raising=False)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
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
def make_task() -> Callable[..., Path]:
    return write_task


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


BLOCKING_SOLVE = "while [ ! -f /logs/agent/go ]; do sleep 0.02; done\necho hello > /app/hello.txt"


class TrialControl:
    """Observe and steer trials owned by the backend under test."""

    @staticmethod
    async def wait_until(predicate: Callable[[], bool], limit_sec: float = 20.0) -> None:
        """Observe state owned by another component (the rollout server's admission task) that
        offers no event to wait on; bounded, and it checks a condition rather than hoping."""
        async with asyncio.timeout(limit_sec):
            while not predicate():  # noqa: ASYNC110 - no event exists for this state
                await asyncio.sleep(0.01)

    @staticmethod
    def agent_started(queue: TrialQueue) -> Callable[[str], Awaitable[None]]:
        """Register a queue hook; the returned coroutine waits until a trial's agent starts."""
        started: dict[str, asyncio.Event] = {}

        def event(trial_name: str) -> asyncio.Event:
            return started.setdefault(trial_name, asyncio.Event())

        async def on_agent_start(hook: TrialHookEvent) -> None:
            event(hook.trial_name).set()

        queue.add_hook(TrialEvent.AGENT_START, on_agent_start)

        async def wait(rollout_id: str) -> None:
            async with asyncio.timeout(30):
                await event(trial_name_for(rollout_id)).wait()

        return wait

    @staticmethod
    def agent_dir(backend: HarborBackend, rollout_id: str) -> Path:
        return backend.trials_dir / trial_name_for(rollout_id) / "agent"

    def release(self, backend: HarborBackend, rollout_id: str) -> None:
        """Let a trial of the blocking task finish: its agent dir is bind-mounted at /logs/agent."""
        (self.agent_dir(backend, rollout_id) / "go").write_text("go")


@pytest.fixture
def trials() -> TrialControl:
    return TrialControl()


@pytest.fixture
def dataset_dir(tmp_path: Path) -> Path:
    """Two plain tasks plus one whose solution waits for a signal file."""
    root = tmp_path / "dataset"
    write_task(root / "hello")
    write_task(root / "quarter", solve="true", test="echo 0.25 > /logs/verifier/reward.txt")
    write_task(root / "blocking", solve=BLOCKING_SOLVE)
    return root
