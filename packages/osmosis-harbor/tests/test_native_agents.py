"""Native Harbor agents through HarborBackend on real trials: oracle solves, nop does not."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from harbor.trial.queue import TrialQueue

from osmosis_ai.rollout.backend.harbor import HarborBackend, local_environment_config
from osmosis_ai.rollout.context import RolloutContext
from osmosis_ai.rollout.types.enums import RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionRequest


def _backend(queue: TrialQueue, task: Path, agent: str, **kwargs: object) -> HarborBackend:
    return HarborBackend(
        orchestrator=queue,
        tasks_dir=task,
        agent=agent,
        environment_config=local_environment_config(),
        **kwargs,  # type: ignore[arg-type]
    )


async def test_oracle_scores_one_and_nop_scores_zero(queue: TrialQueue, hello_task: Path) -> None:
    oracle = _backend(queue, hello_task, "oracle")
    nop = _backend(queue, hello_task, "nop")
    with RolloutContext(chat_completions_url="http://127.0.0.1:9/v1", rollout_id="oracle-1"):
        solved = await oracle.execute(ExecutionRequest(id="oracle-1", prompt=[]))
    with RolloutContext(chat_completions_url="http://127.0.0.1:9/v1", rollout_id="nop-1"):
        idle = await nop.execute(ExecutionRequest(id="nop-1", prompt=[]))

    assert solved.result.status == RolloutStatus.SUCCESS
    assert solved.result.sample is not None
    assert solved.result.sample.reward == 1.0
    assert solved.result.sample.extra_fields == {"trainable": False}
    assert idle.result.status == RolloutStatus.SUCCESS
    assert idle.result.sample is not None
    assert idle.result.sample.reward == 0.0
    timings = solved.workflow.extra_fields["harbor_timings"]  # type: ignore[index]
    assert set(timings) == {"environment_setup", "agent_setup", "agent_execution", "verifier"}
    assert oracle.rollout_status("oracle-1") == {"status": "success", "reward": 1.0}
    # Successful trials are cleaned up; the host never sees the sandbox's /app.
    assert not any(oracle.trials_dir.glob("*oracle-1*"))
    assert not await asyncio.to_thread(os.path.exists, "/app/hello.txt")
    await oracle.shutdown()
    await nop.shutdown()
