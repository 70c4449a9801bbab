"""Dataset mode (each rollout names its task) and cancellation of queued and running trials."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest
from harbor.models.job.config import RetryConfig
from harbor.trial.queue import TrialQueue

from osmosis_ai.rollout.backend.harbor import HarborBackend, TaskMode, local_environment_config
from osmosis_ai.rollout.backend.harbor.backend import trial_name_for
from osmosis_ai.rollout.context import RolloutContext, RolloutProgress
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest


async def _execute(
    backend: HarborBackend,
    rollout_id: str,
    progress: RolloutProgress | None = None,
    **metadata: Any,
) -> ExecutionOutcome:
    request = ExecutionRequest(
        id=rollout_id,
        prompt=[],
        metadata=metadata or None,
        chat_completions_url="http://127.0.0.1:9/v1",
    )
    return await backend.execute(request, progress)


def _sandboxes() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("osmosis-localns-*")}


async def test_dataset_mode_runs_the_task_each_rollout_names(
    queue: TrialQueue, dataset_dir: Path
) -> None:
    backend = HarborBackend(
        orchestrator=queue,
        tasks_dir=dataset_dir,
        task_mode=TaskMode.DATASET,
        agent="oracle",
        environment_config=local_environment_config(),
    )
    hello, quarter, missing, override = await asyncio.gather(
        _execute(backend, "ds-hello", harbor_task_id="hello"),
        _execute(backend, "ds-quarter", harbor_task_id="quarter"),
        _execute(backend, "ds-missing"),
        _execute(backend, "ds-override", harbor_task="./quarter"),
    )
    assert hello.result.sample is not None
    assert hello.result.sample.reward == 1.0
    assert quarter.result.sample is not None
    assert quarter.result.sample.reward == 0.25
    assert override.result.sample is not None
    assert override.result.sample.reward == 0.25
    assert missing.result.status == RolloutStatus.FAILURE
    assert missing.result.err_category == RolloutErrorCategory.VALIDATION_ERROR
    assert "harbor_task_id" in (missing.result.err_message or "")
    escape = await _execute(backend, "ds-escape", harbor_task_id="../dataset/hello")
    assert escape.result.err_category == RolloutErrorCategory.VALIDATION_ERROR
    await backend.shutdown()


async def test_cancelling_execute_withdraws_a_queued_trial_and_stops_a_running_one(
    dataset_dir: Path, trials: Any
) -> None:
    """The rollout server cancels a rollout by cancelling its ``execute`` task: a queued
    trial never starts, a running one is stopped and its sandbox torn down before the
    cancellation returns."""
    queue = TrialQueue(n_concurrent=1, retry_config=RetryConfig(max_retries=0))
    backend = HarborBackend(
        orchestrator=queue,
        tasks_dir=dataset_dir,
        task_mode="dataset",
        agent="oracle",
        environment_config=local_environment_config(),
    )
    agent_started = trials.agent_started(queue)
    before = _sandboxes()
    running_progress, queued_progress = RolloutProgress(), RolloutProgress()
    running = asyncio.create_task(
        _execute(backend, "c-running", running_progress, harbor_task_id="blocking")
    )
    await agent_started("c-running")
    queued = asyncio.create_task(
        _execute(backend, "c-queued", queued_progress, harbor_task_id="hello")
    )
    await trials.wait_until(lambda: backend.health()["queued"] == 1)
    assert backend.health()["running"] == 1
    # One status source: the server's progress objects, moved by the trial hooks.
    assert running_progress.status == RolloutStatus.RUNNING
    assert queued_progress.status == RolloutStatus.QUEUED

    queued.cancel()
    with pytest.raises(asyncio.CancelledError):
        await queued
    assert backend.health()["in_flight"] == 1
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert backend.health()["in_flight"] == 0
    assert backend.has_capacity()
    # The running trial's sandbox was torn down (Harbor stops the environment on cancel).
    assert _sandboxes() == before
    # The cancelled trial's directory is kept for diagnosis; the queued one never started.
    assert [p.name for p in backend.trials_dir.iterdir()] == [trial_name_for("c-running")]
    await backend.shutdown()


async def test_a_rollout_whose_deadline_passes_in_the_queue_times_out(
    dataset_dir: Path, trials: Any
) -> None:
    queue = TrialQueue(n_concurrent=1, retry_config=RetryConfig(max_retries=0))
    agent_started = trials.agent_started(queue)
    backend = HarborBackend(
        orchestrator=queue,
        tasks_dir=dataset_dir,
        task_mode="dataset",
        agent="oracle",
        environment_config=local_environment_config(),
    )
    blocker = asyncio.create_task(_execute(backend, "q-blocker", harbor_task_id="blocking"))
    await agent_started("q-blocker")
    with RolloutContext(chat_completions_url="http://127.0.0.1:9/v1", rollout_id="q-late"):
        late = await backend.execute(
            ExecutionRequest(
                id="q-late", prompt=[], metadata={"harbor_task_id": "hello"}, agent_timeout_sec=0.3
            )
        )
    assert late.result.status == RolloutStatus.FAILURE
    assert late.result.err_category == RolloutErrorCategory.TIMEOUT
    assert "waited for a trial slot" in (late.result.err_message or "")
    trials.release(backend, "q-blocker")
    assert (await blocker).result.status == RolloutStatus.SUCCESS
    await backend.shutdown()
