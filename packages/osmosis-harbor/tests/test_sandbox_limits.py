"""Sandbox creation limits on real trials in the local sandbox: rate, concurrent cap, retries.

The rate is checked on the admission timestamps the gate records (a correctness property of
the limiter: no 1-second window holds more than two creations at 2/s), never on durations;
the concurrent cap is measured independently, by counting live sandboxes around the real
``NamespaceSandbox.start``/``stop``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from harbor.models.job.config import RetryConfig
from harbor.trial.queue import TrialQueue

from osmosis_ai.rollout.backend.harbor import HarborBackend, local_environment_config
from osmosis_ai.rollout.backend.harbor._sandbox_gate import backoff_delay, gate_for
from osmosis_ai.rollout.backend.harbor._sandbox_limits import (
    SandboxLimits,
    SandboxLimitsError,
    resolve_limits,
)
from osmosis_ai.rollout.backend.harbor._sandbox_owner import local_sandboxes
from osmosis_ai.rollout.backend.harbor.local_environment import (
    LocalSandboxError,
    NamespaceSandbox,
)
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest


def test_arguments_win_over_variables_which_win_over_defaults() -> None:
    assert resolve_limits("local", env={}) == SandboxLimits("local")
    assert resolve_limits("skypilot", env={}).creation_rate == 5.0
    env = {
        "OSMOSIS_HARBOR_CREATION_RATE": "3",
        "OSMOSIS_HARBOR_MAX_SANDBOXES": "16",
        "OSMOSIS_HARBOR_CREATION_ATTEMPTS": "5",
        "OSMOSIS_HARBOR_CREATION_BACKOFF_SEC": "0.5",
    }
    assert resolve_limits("skypilot", env=env) == SandboxLimits("skypilot", 3.0, 16, 5, 0.5)
    chosen = resolve_limits("skypilot", creation_rate=0, max_concurrent=4, env=env)
    assert (chosen.creation_rate, chosen.max_concurrent) == (None, 4)  # 0 = no limit
    assert resolve_limits("docker", env={"OSMOSIS_HARBOR_CREATION_RATE": "unlimited"}) == (
        SandboxLimits("docker")
    )


@pytest.mark.parametrize(
    ("kwargs", "env", "named"),
    [
        ({}, {"OSMOSIS_HARBOR_CREATION_RATE": "fast"}, "OSMOSIS_HARBOR_CREATION_RATE='fast'"),
        ({}, {"OSMOSIS_HARBOR_MAX_SANDBOXES": "2.5"}, "OSMOSIS_HARBOR_MAX_SANDBOXES='2.5'"),
        ({}, {"OSMOSIS_HARBOR_CREATION_ATTEMPTS": "0"}, "OSMOSIS_HARBOR_CREATION_ATTEMPTS='0'"),
        ({"creation_rate": -1}, {}, "sandbox_creation_rate=-1"),
        ({"backoff_sec": float("nan")}, {}, "sandbox_creation_backoff_sec=nan"),
    ],
)
def test_a_bad_value_names_its_setting_and_a_valid_example(
    kwargs: dict[str, Any], env: dict[str, str], named: str
) -> None:
    with pytest.raises(SandboxLimitsError) as caught:
        resolve_limits("local", env=env, **kwargs)
    message = str(caught.value)
    assert named in message
    assert "e.g." in message
    assert isinstance(caught.value, ValueError)


def test_the_backoff_doubles_with_jitter_and_is_capped() -> None:
    for attempt, full in ((1, 1.0), (2, 2.0), (3, 4.0), (10, 30.0)):
        delay = backoff_delay(attempt, 1.0)
        assert full / 2 <= delay <= full


def _window_counts(stamps: list[float], window: float = 1.0) -> list[int]:
    """For each creation, how many creations fall in the window starting at it."""
    ordered = sorted(stamps)
    return [sum(1 for t in ordered if start <= t < start + window) for start in ordered]


class _LiveSandboxes:
    """Counts local sandboxes that exist, around the real start and stop."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.live = 0
        self.peak = 0
        self.started = 0
        start, stop = NamespaceSandbox.start, NamespaceSandbox.stop

        async def counted_start(box: NamespaceSandbox, **kwargs: Any) -> None:
            self.live += 1
            self.started += 1
            self.peak = max(self.peak, self.live)
            await start(box, **kwargs)

        async def counted_stop(box: NamespaceSandbox) -> None:
            was_started = box._scratch is not None
            await stop(box)
            if was_started:
                self.live -= 1

        monkeypatch.setattr(NamespaceSandbox, "start", counted_start)
        monkeypatch.setattr(NamespaceSandbox, "stop", counted_stop)


async def _oracle(backend: HarborBackend, rollout_id: str) -> ExecutionOutcome:
    request = ExecutionRequest(id=rollout_id, prompt=[], chat_completions_url="http://127.0.0.1:9")
    return await backend.execute(request)


async def test_32_rollouts_at_2_per_second_never_exceed_the_rate_or_the_cap(
    hello_task: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandboxes = _LiveSandboxes(monkeypatch)
    backend = HarborBackend(
        orchestrator=TrialQueue(n_concurrent=16, retry_config=RetryConfig(max_retries=0)),
        tasks_dir=hello_task,
        agent="oracle",
        environment_config=local_environment_config(),
        sandbox_creation_rate=2,
        max_concurrent_sandboxes=3,
    )
    outcomes = await asyncio.gather(*(_oracle(backend, f"rate-{i}") for i in range(32)))
    assert [o.result.status for o in outcomes] == [RolloutStatus.SUCCESS] * 32
    gate = gate_for(SandboxLimits("local", creation_rate=2.0, max_concurrent=3))
    stamps = list(gate.admissions)
    assert len(stamps) == sandboxes.started == 32  # one admission per real creation
    counts = _window_counts(stamps)
    assert max(counts) <= 2, counts
    assert 1 <= sandboxes.peak <= 3
    assert sandboxes.live == 0
    assert gate.live == 0  # every slot was given back
    assert local_sandboxes() == []  # every sandbox was torn down
    await backend.shutdown()


async def test_a_transient_creation_error_is_retried_and_a_persistent_one_fails_the_rollout(
    hello_task: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failures = {"left": 2}
    start = NamespaceSandbox.start

    async def flaky_start(box: NamespaceSandbox, **kwargs: Any) -> None:
        if failures["left"] > 0:
            failures["left"] -= 1
            raise LocalSandboxError("the sandbox service is busy (scripted)")
        await start(box, **kwargs)

    monkeypatch.setattr(NamespaceSandbox, "start", flaky_start)
    backend = HarborBackend(
        orchestrator=TrialQueue(n_concurrent=1, retry_config=RetryConfig(max_retries=0)),
        tasks_dir=hello_task,
        agent="oracle",
        environment_config=local_environment_config(),
        sandbox_creation_attempts=3,
        sandbox_creation_backoff_sec=0.01,
    )
    recovered = await _oracle(backend, "retry-ok")
    assert recovered.result.status == RolloutStatus.SUCCESS, recovered.result.err_message
    assert failures["left"] == 0

    failures["left"] = 3
    failed = await _oracle(backend, "retry-exhausted")
    assert failed.result.status == RolloutStatus.FAILURE
    assert failed.result.err_category == RolloutErrorCategory.INTERNAL_ERROR
    message = failed.result.err_message or ""
    assert "SandboxCreationError" in message
    assert "after 3 attempt(s)" in message
    assert "the sandbox service is busy" in message  # the cause
    gate = gate_for(SandboxLimits("local", creation_attempts=3, backoff_sec=0.01))
    assert len(gate.admissions) == 3 + 3  # every attempt was admitted by the rate limiter
    assert gate.live == 0
    assert local_sandboxes() == []
    await backend.shutdown()


async def test_a_configuration_error_is_not_retried(
    make_task: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = make_task(tmp_path / "needs-network")
    dockerfile = task / "environment" / "Dockerfile"
    dockerfile.write_text("FROM python:3.12-slim\nRUN apt-get update\n")
    sandboxes = _LiveSandboxes(monkeypatch)
    backend = HarborBackend(
        orchestrator=TrialQueue(n_concurrent=1, retry_config=RetryConfig(max_retries=0)),
        tasks_dir=task,
        agent="oracle",
        environment_config=local_environment_config(),
        sandbox_creation_attempts=4,
        sandbox_creation_backoff_sec=0.01,
    )
    outcome = await _oracle(backend, "unsupported")
    assert outcome.result.status == RolloutStatus.FAILURE
    assert "UnsupportedEnvironmentError" in (outcome.result.err_message or "")
    gate = gate_for(SandboxLimits("local", creation_attempts=4, backoff_sec=0.01))
    assert len(gate.admissions) == 1  # one attempt, no retries
    assert sandboxes.started == 0
    await backend.shutdown()
