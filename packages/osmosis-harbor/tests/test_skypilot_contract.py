"""SkyPilot configuration against a stub ``sky.sandbox`` SDK.

The real SDK ships with the SkyPilot Platform, not PyPI, so this is a contract test: Harbor's
own ``skypilot`` provider (loaded from the config ``skypilot_environment_config`` builds) drives a
stub whose sandboxes are local namespace sandboxes. It checks what the backend asks SkyPilot
for (pool, context, env) and that a full trial works through a provider that does not mount the
log directories (Harbor downloads them, and the harness reads results through ``exec``).
"""

from __future__ import annotations

import asyncio
import importlib
import sys
import types
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from harbor.trial.queue import TrialQueue

from osmosis_ai.rollout.backend.harbor import (
    HarborBackend,
    environment_config_from_env,
    skypilot_environment_config,
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
    def __init__(self, log: list[tuple[str, Any]]) -> None:
        self._box = NamespaceSandbox()
        self._log = log
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
        await self._box.stop()


def _stub_sdk(log: list[tuple[str, Any]]) -> types.ModuleType:
    module = types.ModuleType("sky.sandbox")

    async def create(**kwargs: Any) -> _StubSandbox:
        log.append(("create", kwargs))
        sandbox = _StubSandbox(log)
        await sandbox._box.start(workdir="/app")
        return sandbox

    module.create = _Aio(create)  # type: ignore[attr-defined]
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
    assert [entry for kind, entry in sky_log if kind == "terminate"] == [True, True]
