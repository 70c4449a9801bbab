"""The AgentWorkflow track: the project is bundled, installed in the sandbox and run there; the
workflow calls the scripted policy from inside the sandbox and the SDK grader scores it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import ModuleType
from typing import Any

from harbor.trial.queue import TrialQueue

from osmosis_ai.rollout.backend.harbor import HarborBackend, local_environment_config
from osmosis_ai.rollout.context import RolloutContext
from osmosis_ai.rollout.integrations.spi import files_digest
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest
from osmosis_ai.testing import ScriptedPolicyServer

SECRET = "sk-test-secret-0123456789"


async def _run(
    backend: HarborBackend,
    policy: ScriptedPolicyServer,
    rollout_id: str,
    prompt: str,
    label: str | None,
    **kwargs: Any,
) -> ExecutionOutcome:
    with RolloutContext(
        chat_completions_url=policy.chat_completions_url(rollout_id),
        api_key=SECRET,
        rollout_id=rollout_id,
    ):
        return await backend.execute(
            ExecutionRequest(
                id=rollout_id, prompt=[{"role": "user", "content": prompt}], label=label, **kwargs
            )
        )


def _files_containing(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


async def test_workflow_runs_in_sandbox_and_sdk_grader_scores_it(
    queue: TrialQueue, open_task: Path, multiply_project: ModuleType, osmosis_home: Path
) -> None:
    backend = HarborBackend(
        orchestrator=queue,
        tasks_dir=open_task,
        agent=multiply_project.MultiplyWorkflow,  # type: ignore[attr-defined]
        workflow_config=multiply_project.CONFIG,  # type: ignore[attr-defined]
        grader=multiply_project.MultiplyGrader,  # type: ignore[attr-defined]
        environment_config=local_environment_config(),
        cleanup_successful_trials=False,
    )
    async with ScriptedPolicyServer("multiply") as policy:
        right, wrong = await asyncio.gather(
            _run(backend, policy, "wf-right", "What is 6 times 7?", "42"),
            _run(backend, policy, "wf-wrong", "What is 6 times 7?", "41"),
        )

    assert right.result.status == RolloutStatus.SUCCESS, right.result.err_message
    sample = right.result.sample
    assert sample is not None
    assert sample.reward == 1.0
    assert sample.label == "42"
    assert [m["role"] for m in sample.messages] == ["user", "assistant", "tool", "assistant"]
    assert sample.messages[-1]["content"] == "#### 42"
    assert wrong.result.sample is not None
    assert wrong.result.sample.reward == 0.0
    # The policy calls came from inside the sandbox, scoped and authenticated per rollout.
    calls = policy.requests_for("wf-right")
    assert len(calls) == 2
    assert all(c.bearer_token == SECRET for c in calls)
    # Artifacts written to ctx.artifacts_dir in the sandbox land in the rollout's home dir.
    assert (osmosis_home / "wf-right" / "artifacts" / "turns.txt").read_text() == "4"
    # The key never reaches the trial dir (kept here because cleanup is off), nor the label
    # the agent phase could read.
    trial_dirs = list(backend.trials_dir.iterdir())
    assert len(trial_dirs) == 2
    assert _files_containing(backend.trials_dir, SECRET.encode()) == []
    agent_input = json.loads(
        next(backend.trials_dir.glob("*wf-right*/agent/osmosis_input.json")).read_text()
    )
    assert "label" not in agent_input
    assert "api_key" not in json.dumps(agent_input)
    await backend.shutdown()


async def test_workflow_failure_is_reported_with_its_category(
    queue: TrialQueue, open_task: Path, multiply_project: ModuleType
) -> None:
    backend = HarborBackend(
        orchestrator=queue,
        tasks_dir=open_task,
        agent="multiply_rollout:FailingWorkflow",
        grader="multiply_rollout:MultiplyGrader",
        environment_config=local_environment_config(),
    )
    async with ScriptedPolicyServer("multiply") as policy:
        outcome = await _run(backend, policy, "wf-fail", "What is 2 times 3?", "6")
    assert outcome.result.status == RolloutStatus.FAILURE
    assert outcome.result.err_category == RolloutErrorCategory.VALIDATION_ERROR
    assert outcome.result.err_message == "the workflow refused the prompt"
    assert outcome.grader is None
    await backend.shutdown()


async def test_task_verifier_wins_over_the_sdk_grader(
    queue: TrialQueue, tmp_path: Path, multiply_project: ModuleType
) -> None:
    # The task's own test.sh always writes 0.5; the SDK grader would have given 1.0.
    task = tmp_path / "own-tests"
    (task / "tests").mkdir(parents=True)
    (task / "instruction.md").write_text("Multiply.\n")
    (task / "task.toml").write_text('schema_version = "1.3"\n[environment]\nworkdir = "/app"\n')
    (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 0.5 > /logs/verifier/reward.txt\n")
    (task / "tests" / "test.sh").chmod(0o755)
    backend = HarborBackend(
        orchestrator=queue,
        tasks_dir=task,
        agent="multiply_rollout:MultiplyWorkflow",
        grader="multiply_rollout:MultiplyGrader",
        environment_config=local_environment_config(),
    )
    async with ScriptedPolicyServer("multiply") as policy:
        outcome = await _run(backend, policy, "own-tests", "What is 3 times 5?", "15")
    assert outcome.result.status == RolloutStatus.SUCCESS, outcome.result.err_message
    assert outcome.result.sample is not None
    assert outcome.result.sample.reward == 0.5
    assert outcome.workflow.extra_fields is not None
    assert outcome.workflow.extra_fields["harbor_graded_by"] == "task"
    assert outcome.result.sample.extra_fields["harbor_task"]["name"] == task.name
    # The user's task directory is never modified (each rollout runs a copy).
    assert sorted(p.name for p in (task / "tests").iterdir()) == ["test.sh"]
    await backend.shutdown()


async def _nop_graded(
    task: Path, queue: TrialQueue, grader: str, rollout_id: str
) -> ExecutionOutcome:
    backend = HarborBackend(
        orchestrator=queue,
        tasks_dir=task,
        agent="nop",
        grader=grader,
        environment_config=local_environment_config(),
    )
    with RolloutContext(chat_completions_url="http://127.0.0.1:9/v1", rollout_id=rollout_id):
        outcome = await backend.execute(
            ExecutionRequest(
                id=rollout_id, prompt=[{"role": "user", "content": "#### 42"}], label="42"
            )
        )
    await backend.shutdown()
    return outcome


async def test_native_agents_graded_by_the_sdk_grader(
    queue: TrialQueue, open_task: Path, multiply_project: ModuleType
) -> None:
    # nop leaves the prompt as the whole sample; the generated verifier installs the bundle
    # itself (no harness agent ran) and the grader finds the expected answer in that prompt.
    graded, broken = await asyncio.gather(
        _nop_graded(open_task, queue, "multiply_rollout:MultiplyGrader", "nop-graded"),
        _nop_graded(open_task, queue, "multiply_rollout:RaisingGrader", "nop-broken"),
    )
    assert graded.result.status == RolloutStatus.SUCCESS, graded.result.err_message
    assert graded.result.sample is not None
    assert graded.result.sample.reward == 1.0
    assert graded.workflow.extra_fields is not None
    assert graded.workflow.extra_fields["harbor_graded_by"] == "sdk"
    # The SDK grader's sample (built in the sandbox) carries the task record too, and the
    # generated verifier is not part of the task's digest (it digests the user's directory).
    assert graded.result.sample.extra_fields["harbor_task"]["task_sha256"] == files_digest(
        open_task
    )
    # A grader that raises is a failure with its category, never a reward of 0.
    assert broken.result.status == RolloutStatus.FAILURE
    assert broken.result.err_category == RolloutErrorCategory.VALIDATION_ERROR
    assert broken.result.err_message == "the grader found no answer"
    assert (broken.result.extra_fields or {})["failed_phase"] == "grader"
    assert broken.result.sample is not None
    assert broken.result.sample.reward is None


async def test_prewarm_builds_the_bundle_and_installs_it_once(
    queue: TrialQueue, open_task: Path, multiply_project: ModuleType, osmosis_home: Path
) -> None:
    backend = HarborBackend(
        orchestrator=queue,
        tasks_dir=open_task,
        agent="multiply_rollout:MultiplyWorkflow",
        environment_config=local_environment_config(),
    )
    summary = await backend.prewarm()
    assert summary["install_trial"] == "ok"
    wheels = list((osmosis_home / "cache" / "harbor-bundles").glob("*/*.whl"))
    assert [w.name for w in wheels] == [summary["bundle"]]
    await backend.shutdown()


async def test_prewarm_of_a_template_task_without_instruction_md(
    queue: TrialQueue, tmp_path: Path, multiply_project: ModuleType, make_task: Any
) -> None:
    """Issue 38 item 3: template mode's prompt owns instruction.md, so a template task may ship
    none; the install-only trial gets a placeholder prompt's (as 0.3.8), not a failure."""
    task = make_task(tmp_path / "no-instruction", instruction="unused", solve=None, test=None)
    (task / "instruction.md").unlink()
    backend = HarborBackend(
        orchestrator=queue,
        tasks_dir=task,
        agent="multiply_rollout:MultiplyWorkflow",
        environment_config=local_environment_config(),
    )
    try:
        summary = await backend.prewarm()
    finally:
        await backend.shutdown()
    assert summary["install_trial"] == "ok"
    assert not (task / "instruction.md").exists()  # the user's task is never written to
