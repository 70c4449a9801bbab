"""The pure ``TrialResult`` → ``ExecutionOutcome`` translation, on constructed Harbor results
(no trials): failure categories, the workflow and grader phases, and the reward rule."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from harbor.models.agent.context import AgentContext
from harbor.models.task.id import LocalTaskId
from harbor.models.trial.config import TaskConfig, TrialConfig
from harbor.models.trial.result import AgentInfo, ExceptionInfo, TimingInfo, TrialResult
from harbor.models.verifier.result import VerifierResult

from osmosis_ai.rollout.backend.harbor._outcome import RewardRule, TrialFacts, translate
from osmosis_ai.rollout.backend.harbor.agent import RESULT_METADATA_KEY
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionRequest

PROMPT = [{"role": "user", "content": "Create /app/hello.txt"}]
T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = datetime(2026, 1, 1, 0, 0, 2, tzinfo=UTC)


def _result(
    *,
    rewards: dict[str, Any] | None = None,
    exception: str | None = None,
    agent_ran: bool = True,
    runner: dict[str, Any] | None = None,
) -> TrialResult:
    task = Path("/tasks/hello")
    return TrialResult(
        task_name="hello",
        trial_name="osmosis-r-1",
        trial_uri="file:///trials/osmosis-r-1",
        task_id=LocalTaskId(path=task),
        task_checksum="0",
        config=TrialConfig(task=TaskConfig(path=task), trial_name="osmosis-r-1"),
        agent_info=AgentInfo(name="oracle", version="1"),
        agent_result=AgentContext(metadata={RESULT_METADATA_KEY: runner} if runner else None),
        verifier_result=VerifierResult(rewards=rewards) if rewards is not None else None,
        exception_info=(
            ExceptionInfo(
                exception_type=exception,
                exception_message="it broke",
                exception_traceback="",
                occurred_at=T1,
            )
            if exception
            else None
        ),
        agent_execution=TimingInfo(started_at=T0, finished_at=T1) if agent_ran else None,
    )


def _facts(graded_by: str = "task", *, native: str | None = "nop", **kwargs: Any) -> TrialFacts:
    request = ExecutionRequest(
        id="r-1", prompt=PROMPT, label=kwargs.pop("label", "hello"), grade=kwargs.pop("grade", True)
    )
    return TrialFacts(
        request=request, trial_name="osmosis-r-1", graded_by=graded_by, native=native, **kwargs
    )


def _outcome(result: TrialResult, facts: TrialFacts) -> Any:
    return translate(result, facts, RESULT_METADATA_KEY)


def test_a_single_reward_file_is_the_reward() -> None:
    outcome = _outcome(_result(rewards={"reward": 1.0}), _facts())
    assert outcome.result.status == RolloutStatus.SUCCESS
    assert outcome.wire_reward == 1.0
    sample = outcome.result.sample
    assert sample.label == "hello"
    assert sample.messages == PROMPT  # nop left no trajectory: the prompt is the sample
    assert sample.metrics == {"reward/reward": 1.0}
    assert outcome.workflow.sample.reward is None  # the workflow phase stays ungraded
    assert outcome.workflow.extra_fields["harbor_timings"]["agent_execution"] == 2.0


@pytest.mark.parametrize(
    ("rule", "rewards", "expected"),
    [
        (RewardRule(), {"correctness": 1, "performance": 0}, 0.5),  # mean of the numeric keys
        (RewardRule(), {"reward": 0.25, "correctness": 1}, 0.25),  # `reward` wins
        (RewardRule(key="performance"), {"correctness": 1, "performance": 0.75}, 0.75),
        (
            RewardRule(weights={"correctness": 0.8, "performance": 0.2}),
            {"correctness": 1, "performance": 0.5},
            0.9,
        ),
    ],
)
def test_multi_reward_verifiers_reduce_by_the_rule_and_keep_every_key(
    rule: RewardRule, rewards: dict[str, float], expected: float
) -> None:
    outcome = _outcome(_result(rewards=rewards), _facts(reward_rule=rule))
    assert outcome.result.status == RolloutStatus.SUCCESS
    assert math.isclose(outcome.wire_reward, expected)
    assert outcome.result.sample.metrics == {f"reward/{k}": v for k, v in rewards.items()}
    assert outcome.result.extra_fields["harbor_rewards"] == rewards


@pytest.mark.parametrize(
    ("rule", "rewards", "message"),
    [
        (RewardRule(key="speed"), {"correctness": 1}, "no 'speed' reward"),
        (RewardRule(weights={"a": 1.0, "b": 1.0}), {"a": 1}, "no 'b' reward"),
        (RewardRule(), {}, "no numeric reward"),
        (RewardRule(), {"reward": math.nan}, "not finite"),
    ],
)
def test_unusable_rewards_are_validation_errors_never_zero(
    rule: RewardRule, rewards: dict[str, Any], message: str
) -> None:
    outcome = _outcome(_result(rewards=rewards), _facts(reward_rule=rule))
    assert outcome.result.status == RolloutStatus.FAILURE
    assert outcome.result.err_category == RolloutErrorCategory.VALIDATION_ERROR
    assert message in outcome.result.err_message
    assert outcome.wire_reward is None


@pytest.mark.parametrize(
    ("exception", "agent_ran", "category"),
    [
        ("AgentTimeoutError", True, RolloutErrorCategory.TIMEOUT),
        ("EnvironmentStartTimeoutError", False, RolloutErrorCategory.INTERNAL_ERROR),
        ("NonZeroAgentExitCodeError", True, RolloutErrorCategory.AGENT_ERROR),
    ],
)
def test_agent_phase_exceptions_fail_the_workflow_with_their_category(
    exception: str, agent_ran: bool, category: RolloutErrorCategory
) -> None:
    outcome = _outcome(_result(exception=exception, agent_ran=agent_ran), _facts())
    assert outcome.grader is None
    assert outcome.result.err_category == category
    assert outcome.result.err_message == f"{exception}: it broke"
    assert outcome.workflow.extra_fields["harbor_exception"] == exception


@pytest.mark.parametrize(
    ("exception", "category"),
    [
        ("VerifierTimeoutError", RolloutErrorCategory.TIMEOUT),
        ("RewardFileNotFoundError", RolloutErrorCategory.AGENT_ERROR),
    ],
)
def test_a_failing_task_verifier_fails_the_grader_phase(
    exception: str, category: RolloutErrorCategory
) -> None:
    outcome = _outcome(_result(exception=exception), _facts())
    assert outcome.workflow.status == RolloutStatus.SUCCESS
    assert outcome.result.status == RolloutStatus.FAILURE
    assert outcome.result.err_category == category
    assert outcome.result.err_message.startswith(f"task verifier failed: {exception}")


def test_the_oracle_sample_is_never_trainable_and_uses_the_native_trajectory() -> None:
    messages = [*PROMPT, {"role": "assistant", "content": "done"}]
    outcome = _outcome(
        _result(rewards={"reward": 1}), _facts(native="oracle", native_messages=messages)
    )
    assert outcome.result.sample.extra_fields == {"trainable": False}
    assert outcome.result.sample.messages == messages


def test_workflow_runner_results() -> None:
    sample = {"messages": [*PROMPT, {"role": "assistant", "content": "ok"}]}
    ok = _outcome(
        _result(rewards={"reward": 1}, runner={"status": "success", "sample": sample}),
        _facts(native=None),
    )
    assert ok.wire_reward == 1.0
    assert ok.result.sample.label == "hello"
    failed = _outcome(
        _result(
            rewards={"reward": 1},
            runner={"status": "failure", "err_message": "refused", "err_category": "agent_error"},
        ),
        _facts(native=None),
    )
    assert (failed.result.err_category, failed.result.err_message) == ("agent_error", "refused")
    assert failed.grader is None
    silent = _outcome(_result(rewards={"reward": 1}), _facts(native=None))
    assert silent.result.err_category == RolloutErrorCategory.INTERNAL_ERROR
    no_sample = _outcome(
        _result(rewards={"reward": 1}, runner={"status": "success", "sample": None}),
        _facts(native=None),
    )
    assert no_sample.result.err_category == RolloutErrorCategory.VALIDATION_ERROR
    assert no_sample.result.err_message.startswith("No sample to grade")


def test_the_sdk_graders_result_file_is_the_grader_phase() -> None:
    graded = {"status": "success", "sample": {"messages": PROMPT, "reward": 0.5}}
    outcome = _outcome(_result(rewards={"reward": 0.5}), _facts("sdk", grader_result=graded))
    assert outcome.wire_reward == 0.5
    removed = {"status": "success", "sample": {"messages": PROMPT, "remove_sample": True}}
    outcome = _outcome(_result(rewards={"reward": 0.0}), _facts("sdk", grader_result=removed))
    assert outcome.result.status == RolloutStatus.SUCCESS
    assert outcome.result.sample.remove_sample
    assert outcome.wire_reward is None
    broken = {"status": "failure", "err_message": "boom", "err_category": "validation_error"}
    outcome = _outcome(
        _result(exception="RewardFileNotFoundError"), _facts("sdk", grader_result=broken)
    )
    assert outcome.result.err_category == RolloutErrorCategory.VALIDATION_ERROR
    assert outcome.result.err_message == "boom"  # as LocalBackend reports it


def test_ungraded_and_ungradable_rollouts() -> None:
    ungraded = _outcome(_result(rewards={"reward": 1}), _facts(grade=False))
    assert ungraded.grader is None
    assert ungraded.wire_reward is None
    nothing = _outcome(_result(), _facts("none"))
    assert nothing.result.err_category == RolloutErrorCategory.VALIDATION_ERROR
    assert "no tests/test.sh and no grader=" in nothing.result.err_message
