"""SkyPilot configuration against a stub ``sky.sandbox`` SDK.

The real SDK ships with the SkyPilot Platform, not PyPI, so this is a contract test: Harbor's
own ``skypilot`` provider (loaded from the config ``skypilot_environment_config`` builds) drives a
stub whose sandboxes are local namespace sandboxes. It checks what the backend asks SkyPilot
for (pool, context, env) and that a full trial works through a provider that does not mount the
log directories (Harbor downloads them, and the harness reads results through ``exec``).
It also checks the sandbox gate against the same API: creation admissions, retries of a failed
``create``, ``terminate`` of every sandbox, owner-labelled names, and the orphan sweep through
``sky.sandbox.list``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import json
import os
import socket
import subprocess
import sys
import types
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from harbor.models.job.config import RetryConfig
from harbor.trial.queue import TrialQueue

from osmosis_ai.rollout.backend.harbor import (
    HarborBackend,
    environment_config_from_env,
    skypilot_environment_config,
)
from osmosis_ai.rollout.backend.harbor._sandbox_gate import gate_for
from osmosis_ai.rollout.backend.harbor._sandbox_limits import SandboxLimits
from osmosis_ai.rollout.backend.harbor._sandbox_owner import (
    Owner,
    current_owner,
    registered_owner,
    sandbox_name,
)
from osmosis_ai.rollout.backend.harbor.local_environment import NamespaceSandbox
from osmosis_ai.rollout.context import RolloutContext
from osmosis_ai.rollout.types.enums import RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest
from osmosis_ai.testing import ScriptedPolicyServer


class _Aio:
    """``sdk.call.aio(...)``: the Platform SDK's async spelling of each call."""

    def __init__(self, fn: Any) -> None:
        self.aio = fn


class _Stream:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def read(self) -> bytes:
        return self._data


class _Handle:
    def __init__(self, code: int, stdout: bytes, stderr: bytes) -> None:
        self._code = code
        self.stdout = _Stream(stdout)
        self.stderr = _Stream(stderr)

    async def wait(self) -> int:
        return self._code


class _StubSandbox:
    def __init__(self, log: list[tuple[str, Any]], name: str, live: dict[str, Any]) -> None:
        self._box = NamespaceSandbox()
        self._log = log
        self._live = live
        self.name = name
        live[name] = self
        self.exec = _Aio(self._exec)
        self.write_bytes = _Aio(self._write)
        self.read_bytes = _Aio(self._read)
        self.terminate = _Aio(self._terminate)

    async def _exec(
        self, *argv: str, workdir: str | None, timeout_seconds: int, env: dict[str, str] | None
    ) -> _Handle:
        code, out, err = await self._box.run(
            list(argv), cwd=workdir, env=env, timeout_sec=timeout_seconds
        )
        return _Handle(code, out, err)

    async def _write(self, data: bytes, path: str) -> None:
        target = self._box.inside(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    async def _read(self, path: str) -> bytes:
        return self._box.inside(path).read_bytes()

    async def _terminate(self, wait: bool = True) -> None:
        self._log.append(("terminate", wait))
        self._live.pop(self.name, None)
        await self._box.stop()


def _stub_sdk(log: list[tuple[str, Any]]) -> types.ModuleType:
    module = types.ModuleType("sky.sandbox")
    live: dict[str, _StubSandbox] = {}
    failures = {"left": 0}  # the next creates that fail like a busy API server

    async def create(**kwargs: Any) -> _StubSandbox:
        log.append(("create", kwargs))
        if failures["left"] > 0:
            failures["left"] -= 1
            raise RuntimeError("sandbox quota exceeded, try again (scripted)")
        sandbox = _StubSandbox(log, kwargs["name"], live)
        await sandbox._box.start(workdir="/app")
        return sandbox

    async def list_sandboxes() -> list[_StubSandbox]:
        log.append(("list", None))
        return list(live.values())

    module.create = _Aio(create)  # type: ignore[attr-defined]
    module.list = _Aio(list_sandboxes)  # type: ignore[attr-defined]
    module.live = live  # type: ignore[attr-defined]
    module.failures = failures  # type: ignore[attr-defined]
    return module


@pytest.fixture
def sky_log(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    log: list[tuple[str, Any]] = []
    sdk = _stub_sdk(log)
    sky = types.ModuleType("sky")
    sky.sandbox = sdk  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sky", sky)
    monkeypatch.setitem(sys.modules, "sky.sandbox", sdk)
    provider = importlib.import_module("harbor.environments.skypilot")
    monkeypatch.setattr(provider, "sky_sandbox", sdk)
    monkeypatch.setattr(provider, "_HAS_SKYPILOT", True)
    return log


@pytest.fixture
def sky_sdk(sky_log: list[tuple[str, Any]]) -> Any:
    return sys.modules["sky.sandbox"]


def test_settings_become_the_skypilot_environment_config() -> None:
    config = environment_config_from_env(
        {
            "OSMOSIS_HARBOR_ENV": "skypilot",
            "HARBOR_SKYPILOT_CONTEXT": "gke-prod",
            "HARBOR_SKYPILOT_POOL": "rollouts",
            "HARBOR_SKYPILOT_NAMESPACE": "rl",
        }
    )
    assert str(getattr(config.type, "value", config.type)) == "skypilot"
    assert config.import_path is None
    assert config.kwargs == {"context_name": "gke-prod", "pool": "rollouts", "namespace": "rl"}
    with pytest.raises(ValueError, match="either registry"):
        skypilot_environment_config(registry="ghcr.io/x", pool="p")


async def _oracle(queue: TrialQueue, task: Path) -> ExecutionOutcome:
    backend = HarborBackend(
        orchestrator=queue,
        tasks_dir=task,
        agent="oracle",
        environment_config=skypilot_environment_config(context_name="gke-prod", pool="warm"),
    )
    with RolloutContext(chat_completions_url="http://127.0.0.1:9/v1", rollout_id="sky-oracle"):
        outcome = await backend.execute(ExecutionRequest(id="sky-oracle", prompt=[]))
    await backend.shutdown()
    return outcome


async def _workflow(queue: TrialQueue, task: Path) -> ExecutionOutcome:
    # The stub's sandboxes share the host userland, so point the installer at this interpreter.
    environment = skypilot_environment_config(
        context_name="gke-prod",
        pool="warm",
        env={"OSMOSIS_SANDBOX_PYTHON": sys.executable, "OSMOSIS_BUNDLE_NO_DEPS": "1"},
    )
    backend = HarborBackend(
        orchestrator=queue,
        tasks_dir=task,
        agent="multiply_rollout:MultiplyWorkflow",
        grader="multiply_rollout:MultiplyGrader",
        environment_config=environment,
    )
    async with ScriptedPolicyServer("multiply") as policy:
        with RolloutContext(
            chat_completions_url=policy.chat_completions_url("sky-flow"), rollout_id="sky-flow"
        ):
            outcome = await backend.execute(
                ExecutionRequest(
                    id="sky-flow", prompt=[{"role": "user", "content": "4 times 9?"}], label="36"
                )
            )
    await backend.shutdown()
    return outcome


async def test_trials_run_through_harbors_skypilot_provider(
    sky_log: list[tuple[str, Any]],
    queue: TrialQueue,
    hello_task: Path,
    open_task: Path,
    multiply_project: ModuleType,
) -> None:
    # SkyPilot does not mount the log directories: Harbor downloads them, the harness reads
    # the runner's result through exec, and the SDK verifier's reward comes back as a file.
    oracle, workflow = await asyncio.gather(_oracle(queue, hello_task), _workflow(queue, open_task))

    assert oracle.result.status == RolloutStatus.SUCCESS, oracle.result.err_message
    assert oracle.result.sample is not None
    assert oracle.result.sample.reward == 1.0
    assert workflow.result.status == RolloutStatus.SUCCESS, workflow.result.err_message
    assert workflow.result.sample is not None
    assert workflow.result.sample.reward == 1.0
    creates = [entry for kind, entry in sky_log if kind == "create"]
    assert len(creates) == 2
    for create in creates:
        assert create["pool"] == "warm"
        assert create["context_name"] == "gke-prod"
        assert "image" not in create  # a warm pool supplies the image
        # Labelled with its owner: this process, through the owner registry.
        assert create["name"].startswith(f"osmo-{current_owner().token}-osmosis-sky-")
        assert registered_owner(current_owner().token) == current_owner()
    assert [entry for kind, entry in sky_log if kind == "terminate"] == [True, True]


def _dead_owner() -> Owner:
    """The registry record of a process that has exited."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                           capture_output=True, text=True)  # fmt: skip
    owner = Owner("deadbeef00", int(child.stdout), None, socket.gethostname(), 0.0)
    registry = Path(os.environ["OSMOSIS_HOME"]) / "sandboxes"
    registry.mkdir(parents=True, exist_ok=True)
    (registry / f"{owner.token}.json").write_text(json.dumps(dataclasses.asdict(owner)))
    return owner


async def test_limits_retries_teardown_and_sweep_go_through_the_skypilot_api(
    sky_log: list[tuple[str, Any]], sky_sdk: Any, hello_task: Path
) -> None:
    # A dead run's sandbox, a live one of ours, and one of an owner this machine does not know.
    dead = _dead_owner()
    await sky_sdk.create.aio(name=f"osmo-{dead.token}-osmosis-old-run")
    await sky_sdk.create.aio(name=sandbox_name("osmosis-still-running__env"))
    await sky_sdk.create.aio(name="osmo-0123456789-someone-elses")
    sky_log.clear()
    sky_sdk.failures["left"] = 1  # the first create of the rollout fails
    backend = HarborBackend(
        orchestrator=TrialQueue(n_concurrent=1, retry_config=RetryConfig(max_retries=0)),
        tasks_dir=hello_task,
        agent="oracle",
        environment_config=skypilot_environment_config(context_name="gke-prod", pool="warm"),
        sandbox_creation_rate=1,
        sandbox_creation_attempts=2,
        sandbox_creation_backoff_sec=0.01,
    )
    request = ExecutionRequest(id="sky-retry", prompt=[], chat_completions_url="http://127.0.0.1:9")
    outcome = await backend.execute(request)
    await backend.shutdown()

    assert outcome.result.status == RolloutStatus.SUCCESS, outcome.result.err_message
    kinds = [kind for kind, _ in sky_log]
    # The sweep ran before the first trial and terminated only the dead owner's sandbox.
    assert kinds[:2] == ["list", "terminate"]
    assert sorted(sky_sdk.live) == sorted(
        [sandbox_name("osmosis-still-running__env"), "osmo-0123456789-someone-elses"]
    )
    assert registered_owner(dead.token) is None  # the dead owner's record went with it
    # Two creates (the first failed and was retried), one terminate of the created sandbox.
    assert kinds[2:] == ["create", "create", "terminate"]
    gate = gate_for(SandboxLimits("skypilot", 1.0, None, 2, 0.01))
    stamps = sorted(gate.admissions)
    assert len(stamps) == 2  # each create was admitted by the rate limiter
    assert stamps[1] - stamps[0] >= 1.0  # at 1/s, no 1-second window holds two creations
    for sandbox in list(sky_sdk.live.values()):
        await sandbox.terminate.aio(wait=True)


async def test_a_create_that_keeps_failing_fails_the_rollout_with_its_cause(
    sky_log: list[tuple[str, Any]], sky_sdk: Any, hello_task: Path
) -> None:
    sky_sdk.failures["left"] = 5
    backend = HarborBackend(
        orchestrator=TrialQueue(n_concurrent=1, retry_config=RetryConfig(max_retries=0)),
        tasks_dir=hello_task,
        agent="oracle",
        environment_config=skypilot_environment_config(context_name="gke-prod", pool="warm"),
        sandbox_creation_attempts=3,
        sandbox_creation_backoff_sec=0.01,
    )
    request = ExecutionRequest(id="sky-down", prompt=[], chat_completions_url="http://127.0.0.1:9")
    outcome = await backend.execute(request)
    await backend.shutdown()
    assert outcome.result.status == RolloutStatus.FAILURE
    message = outcome.result.err_message or ""
    assert "could not create a skypilot sandbox after 3 attempt(s)" in message
    assert "sandbox quota exceeded" in message
    assert [kind for kind, _ in sky_log].count("create") == 3
    assert sky_sdk.live == {}
