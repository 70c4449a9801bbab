"""One engine, two backends: identical workflow/grader cases run through LocalBackend
(in-process) and HarborBackend (real trials, the bundled runner inside the local sandbox)
give identical outcomes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import ModuleType
from typing import Any

from harbor.models.job.config import RetryConfig
from harbor.trial.queue import TrialQueue

from osmosis_ai.rollout.backend.harbor import HarborBackend, local_environment_config
from osmosis_ai.rollout.backend.local import LocalBackend
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest

# case -> (workflow, grader, label)
CASES: dict[str, tuple[str, str, str | None]] = {
    "no-sample": ("NoSampleWorkflow", "LabelGrader", "42"),
    "remove-sample": ("EchoWorkflow", "RemovingGrader", "42"),
    "nan-reward": ("EchoWorkflow", "NaNGrader", "42"),
    "raising-grader": ("EchoWorkflow", "RaisingGrader", "42"),
    "missing-label": ("EchoWorkflow", "LabelGrader", None),
}
# What each case must come to (the one reward rule), so agreement is not agreement on a bug.
EXPECTED = {
    "no-sample": ("failure", "validation_error", None),
    "remove-sample": ("success", None, None),
    "nan-reward": ("failure", "validation_error", None),
    "raising-grader": ("failure", "validation_error", None),
    "missing-label": ("success", None, 0.5),
}


def _view(outcome: ExecutionOutcome) -> dict[str, Any]:
    """Everything the controller and the trajectory see, minus backend diagnostics."""
    result = outcome.result
    sample = result.sample
    return {
        "status": str(result.status),
        "err_category": str(result.err_category) if result.err_category else None,
        "err_message": result.err_message,
        "wire_reward": outcome.wire_reward,
        "workflow_status": str(outcome.workflow.status),
        "graded": outcome.grader is not None,
        "sample": None
        if sample is None
        else {
            "messages": sample.messages,
            "label": sample.label,
            "reward": sample.reward,
            "remove_sample": sample.remove_sample,
        },
    }


def _request(case: str) -> ExecutionRequest:
    return ExecutionRequest(
        id=f"contract-{case}",
        prompt=[{"role": "user", "content": "What is 6 times 7?"}],
        label=CASES[case][2],
        chat_completions_url="http://127.0.0.1:9/v1",
    )


async def _local(case: str, tmp_path: Path) -> ExecutionOutcome:
    workflow, grader, _ = CASES[case]
    backend = LocalBackend(
        workflow=f"contract_cases:{workflow}",
        grader=f"contract_cases:{grader}",
        artifact_root=tmp_path / "local-artifacts",
    )
    try:
        return await backend.execute(_request(case))
    finally:
        await backend.shutdown()


async def _harbor(case: str, queue: TrialQueue, task: Path) -> ExecutionOutcome:
    workflow, grader, _ = CASES[case]
    backend = HarborBackend(
        orchestrator=queue,
        tasks_dir=task,
        agent=f"contract_cases:{workflow}",
        grader=f"contract_cases:{grader}",
        environment_config=local_environment_config(),
    )
    try:
        return await backend.execute(_request(case))
    finally:
        await backend.shutdown()


async def test_local_and_harbor_backends_give_identical_outcomes(
    open_task: Path, multiply_project: ModuleType, tmp_path: Path
) -> None:
    queue = TrialQueue(n_concurrent=len(CASES), retry_config=RetryConfig(max_retries=0))
    local = {case: await _local(case, tmp_path) for case in CASES}
    harbor = dict(
        zip(
            CASES,
            await asyncio.gather(*(_harbor(case, queue, open_task) for case in CASES)),
            strict=True,
        )
    )
    for case in CASES:
        assert _view(harbor[case]) == _view(local[case]), case
        view = _view(local[case])
        assert (view["status"], view["err_category"], view["wire_reward"]) == EXPECTED[case], case
    assert (local["no-sample"].result.err_message or "").startswith("No sample to grade")
    assert local["nan-reward"].result.err_message == "grader produced a non-finite reward (nan)"
    assert local["raising-grader"].result.err_message == "the grader found no answer"
    removed = local["remove-sample"].result.sample
    assert removed is not None
    assert removed.remove_sample
