"""Native Harbor agents through HarborBackend on real trials: oracle solves, nop does not."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from harbor.trial.queue import TrialQueue

from osmosis_ai.rollout.backend.harbor import HarborBackend, local_environment_config
from osmosis_ai.rollout.context import RolloutContext
from osmosis_ai.rollout.integrations.spi import files_digest
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionRequest
from osmosis_ai.testing import ScriptedPolicyServer, text_reply


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
    assert solved.result.sample.extra_fields["trainable"] is False
    # The reproducibility record of the task travels with the sample (tests/test_digests.py).
    record = solved.result.sample.extra_fields["harbor_task"]
    assert record["name"] == "hello"
    assert record["task_sha256"] == files_digest(hello_task)
    assert (record["environment"], record["image_digest"]) == ("local", None)
    assert idle.result.status == RolloutStatus.SUCCESS
    assert idle.result.sample is not None
    assert idle.result.sample.reward == 0.0
    timings = solved.workflow.extra_fields["harbor_timings"]  # type: ignore[index]
    assert set(timings) == {"environment_setup", "agent_setup", "agent_execution", "verifier"}
    assert solved.wire_reward == 1.0
    # Successful trials are cleaned up; the host never sees the sandbox's /app.
    assert not any(oracle.trials_dir.glob("*oracle-1*"))
    assert not await asyncio.to_thread(os.path.exists, "/app/hello.txt")
    await oracle.shutdown()
    await nop.shutdown()


@pytest.fixture
def git_task(tmp_path: Path, make_task: Callable[..., Path]) -> tuple[Path, str]:
    """A git repository holding ``tasks/hello``, and its commit."""
    repo = tmp_path / "repo"
    make_task(repo / "tasks" / "hello")
    git = ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "task"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True)
    return repo, head.stdout.strip()


async def test_a_task_pinned_to_a_git_commit(
    queue: TrialQueue, tmp_path: Path, git_task: tuple[Path, str]
) -> None:
    repo, commit = git_task
    backend = _backend(queue, tmp_path, "oracle")  # tasks_dir is unused: the rollout names its task
    metadata = {"harbor_task": "tasks/hello", "git_url": f"file://{repo}", "git_commit_id": commit}
    with RolloutContext(chat_completions_url="http://127.0.0.1:9/v1", rollout_id="git-1"):
        outcome = await backend.execute(ExecutionRequest(id="git-1", prompt=[], metadata=metadata))
    assert outcome.result.status == RolloutStatus.SUCCESS, outcome.result.err_message
    assert outcome.result.sample is not None
    assert outcome.result.sample.reward == 1.0
    record = outcome.result.sample.extra_fields["harbor_task"]
    assert record["name"] == f"file://{repo}@{commit}:tasks/hello"
    assert record["task_sha256"] == files_digest(repo / "tasks" / "hello")
    await backend.shutdown()


async def test_agent_deadline_and_grade_false(queue: TrialQueue, dataset_dir: Path) -> None:
    backend = _backend(queue, dataset_dir, "oracle", task_mode="dataset")
    with RolloutContext(chat_completions_url="http://127.0.0.1:9/v1", rollout_id="slow"):
        slow = await backend.execute(
            ExecutionRequest(
                id="slow", prompt=[], metadata={"harbor_task_id": "blocking"}, agent_timeout_sec=0.5
            )
        )
    assert slow.result.status == RolloutStatus.FAILURE
    assert slow.result.err_category == RolloutErrorCategory.TIMEOUT
    assert "AgentTimeoutError" in (slow.result.err_message or "")
    with RolloutContext(chat_completions_url="http://127.0.0.1:9/v1", rollout_id="ungraded"):
        ungraded = await backend.execute(
            ExecutionRequest(
                id="ungraded", prompt=[], metadata={"harbor_task_id": "hello"}, grade=False
            )
        )
    assert ungraded.result.status == RolloutStatus.SUCCESS
    assert ungraded.grader is None
    assert ungraded.result.sample is not None
    assert ungraded.result.sample.reward is None
    assert ungraded.result.sample.extra_fields["harbor_task"]["name"] == "hello"  # the task id
    await backend.shutdown()


TERMINUS_REPLY = json.dumps(
    {
        "analysis": "The file does not exist yet.",
        "plan": "Write it with echo.",
        "commands": [{"keystrokes": "echo hello > /app/hello.txt\n", "duration": 0.1}],
        "task_complete": True,
    }
)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="terminus-2 drives tmux in the sandbox")
async def test_terminus_2_calls_the_rollout_policy(queue: TrialQueue, hello_task: Path) -> None:
    """terminus-2 runs in this process (LiteLLM) and drives tmux in the sandbox; its model calls
    go to the rollout's endpoint with the rollout's key, and the key stays out of the trial dir.
    (Most of this test's time is Harbor importing LiteLLM for terminus-2.)"""
    key = "sk-terminus-rollout-key-42"
    backend = _backend(
        queue,
        hello_task,
        "terminus-2",
        native_agent_kwargs={"record_terminal_session": False, "max_turns": 4},
        cleanup_successful_trials=False,
    )
    async with ScriptedPolicyServer(lambda body: text_reply(TERMINUS_REPLY)) as policy:
        with RolloutContext(
            chat_completions_url=policy.chat_completions_url("term-1"),
            api_key=key,
            rollout_id="term-1",
        ):
            outcome = await backend.execute(
                ExecutionRequest(
                    id="term-1", prompt=[{"role": "user", "content": "Create hello.txt"}]
                )
            )
        calls = policy.requests_for("term-1")
    assert outcome.result.status == RolloutStatus.SUCCESS, outcome.result.err_message
    assert outcome.result.sample is not None
    assert outcome.result.sample.reward == 1.0
    assert calls
    assert all(call.bearer_token == key for call in calls)
    assert outcome.result.sample.messages[-1]["role"] == "assistant"  # from terminus' ATIF
    leaked = [
        p for p in backend.trials_dir.rglob("*") if p.is_file() and key.encode() in p.read_bytes()
    ]
    assert leaked == []
    await backend.shutdown()
