"""A finished Harbor trial as an ``ExecutionOutcome``: a pure translation, no I/O.

The backend reads what it needs from the trial directory first (:class:`TrialReadings`), then
:func:`translate` maps Harbor's ``TrialResult`` onto the two phases:

- **workflow**: an exception before or during the agent phase is a failure (``timeout`` for
  ``AgentTimeoutError``, ``internal_error`` when the agent never started, since that is the
  environment or the install, else ``agent_error``); otherwise the sample is the in-sandbox
  runner's result (bundled ``AgentWorkflow``) or the native agent's ATIF trajectory.
- **grader**: with the SDK grader (``graded_by="sdk"``) the runner's graded sample is the
  result. With the task's own verifier the reward comes from its reward file by the backend's
  :class:`RewardRule`, and every reward key is recorded as a metric (``reward/<key>``). A
  verifier that fails is a failure with its category, never a reward of 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.integrations.spi import validate_reward
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionResult
from osmosis_ai.rollout.types.sample import RolloutSample

if TYPE_CHECKING:
    from harbor.models.trial.result import TrialResult
    from osmosis_ai.rollout.types.execution import ExecutionRequest

VERIFIER_EXCEPTIONS = frozenset(
    {
        "RewardFileNotFoundError",
        "RewardFileEmptyError",
        "VerifierOutputParseError",
        "VerifierTimeoutError",
        "AddTestsDirError",
        "DownloadVerifierDirError",
    }
)
REWARD_METRIC_PREFIX = "reward/"
_MESSAGE_LIMIT = 2000


@dataclass(frozen=True, slots=True)
class RewardRule:
    """How one reward is derived from a verifier's reward file (a name → number mapping).

    ``key``: that entry is the reward. ``weights``: the weighted sum of those entries (each must
    be present). Neither: ``reward`` when present, else the mean of the numeric entries.
    """

    key: str | None = None
    weights: Mapping[str, float] | None = None

    def derive(self, rewards: Mapping[str, Any]) -> tuple[float | None, str | None]:
        """``(reward, None)`` or ``(None, what is wrong)``."""
        numeric = {
            k: float(v)
            for k, v in rewards.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        if self.weights is not None:
            missing = sorted(set(self.weights) - set(numeric))
            if missing:
                return None, f"the verifier wrote no {', '.join(map(repr, missing))} reward"
            value = sum(weight * numeric[k] for k, weight in self.weights.items())
        elif self.key is not None:
            if self.key not in numeric:
                return None, f"the verifier wrote no {self.key!r} reward"
            value = numeric[self.key]
        elif "reward" in rewards:
            if "reward" not in numeric:
                return None, "the verifier's 'reward' is not a number"
            value = numeric["reward"]
        elif numeric:
            value = sum(numeric.values()) / len(numeric)
        else:
            return None, "the verifier wrote no numeric reward"
        if not math.isfinite(value):
            return None, f"the verifier's reward is not finite ({value})"
        return value, None


@dataclass(frozen=True, slots=True)
class TrialFacts:
    """What the backend knew when it built the trial and what it read back from its directory.

    ``native_messages``: chat messages from a native agent's ATIF trajectory (``None`` when
    there was none); ``grader_result``: the SDK grader's result file (``None`` when absent).
    """

    request: ExecutionRequest
    trial_name: str
    graded_by: str  # "task" | "sdk" | "none"
    native: str | None = None
    reward_rule: RewardRule = RewardRule()
    native_messages: list[dict[str, Any]] | None = None
    grader_result: dict[str, Any] | None = None


def _seconds(timing: Any) -> float | None:
    start: datetime | None = getattr(timing, "started_at", None)
    end: datetime | None = getattr(timing, "finished_at", None)
    if start is None or end is None:
        return None
    return round((end - start).total_seconds(), 4)


def trial_timings(result: TrialResult) -> dict[str, float | None]:
    """Seconds spent per trial phase (environment start, agent setup, agent, verifier)."""
    return {
        "environment_setup": _seconds(result.environment_setup),
        "agent_setup": _seconds(result.agent_setup),
        "agent_execution": _seconds(result.agent_execution),
        "verifier": _seconds(result.verifier),
    }


def category(value: Any) -> RolloutErrorCategory:
    try:
        return RolloutErrorCategory(value)
    except ValueError:
        return RolloutErrorCategory.AGENT_ERROR


def failure(
    message: str,
    err_category: RolloutErrorCategory,
    *,
    sample: RolloutSample | None = None,
    extra: dict[str, Any] | None = None,
) -> ExecutionResult:
    return ExecutionResult(
        status=RolloutStatus.FAILURE,
        sample=sample,
        err_message=message[:_MESSAGE_LIMIT],
        err_category=err_category,
        extra_fields=extra or None,
    )


def translate(result: TrialResult, facts: TrialFacts, result_metadata_key: str) -> ExecutionOutcome:
    """The outcome of one finished trial (see the module docs)."""
    extra: dict[str, Any] = {
        "harbor_trial": facts.trial_name,
        "harbor_timings": trial_timings(result),
        "harbor_graded_by": facts.graded_by,
    }
    exc = result.exception_info
    if exc is not None:
        extra["harbor_exception"] = exc.exception_type
        if exc.exception_type not in VERIFIER_EXCEPTIONS:
            if exc.exception_type == "AgentTimeoutError":
                err_category = RolloutErrorCategory.TIMEOUT
            elif result.agent_execution is None:
                err_category = RolloutErrorCategory.INTERNAL_ERROR
            else:
                err_category = RolloutErrorCategory.AGENT_ERROR
            message = f"{exc.exception_type}: {exc.exception_message}".strip()
            return ExecutionOutcome(workflow=failure(message, err_category, extra=extra))
    workflow = _workflow_result(result, facts, result_metadata_key, extra)
    if workflow.status != RolloutStatus.SUCCESS or not facts.request.grade:
        return ExecutionOutcome(workflow=workflow)
    return ExecutionOutcome(
        workflow=workflow, grader=_grader_result(workflow, result, facts, extra)
    )


def _workflow_result(
    result: TrialResult, facts: TrialFacts, result_metadata_key: str, extra: dict[str, Any]
) -> ExecutionResult:
    request = facts.request
    if facts.native is not None:
        messages = facts.native_messages
        sample = RolloutSample(
            messages=messages if messages is not None else list(request.prompt),
            label=request.label,
        )
        if facts.native == "oracle":
            sample.extra_fields = {"trainable": False}
        return ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample, extra_fields=extra)
    metadata = result.agent_result.metadata if result.agent_result is not None else None
    payload = (metadata or {}).get(result_metadata_key)
    if not isinstance(payload, dict):
        return failure(
            "the rollout runner reported no result",
            RolloutErrorCategory.INTERNAL_ERROR,
            extra=extra,
        )
    return _runner_result(payload, request.label, extra, "the workflow failed")


def _runner_result(
    payload: Mapping[str, Any], label: str | None, extra: dict[str, Any], default_error: str
) -> ExecutionResult:
    """An ``ExecutionResult`` the in-sandbox runner wrote (workflow or grader phase)."""
    extra = {**extra, **(payload.get("extra_fields") or {})}  # e.g. failed_phase
    sample = None
    if payload.get("sample") is not None:
        sample = RolloutSample.model_validate(payload["sample"])
        sample.label = label
    if payload.get("status") != "success":
        return failure(
            str(payload.get("err_message") or default_error),
            category(payload.get("err_category")),
            sample=sample,
            extra=extra,
        )
    return ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample, extra_fields=extra)


def _grader_result(
    workflow: ExecutionResult, result: TrialResult, facts: TrialFacts, extra: dict[str, Any]
) -> ExecutionResult:
    if facts.graded_by == "none":
        return failure(
            "nothing can grade this rollout: the task has no tests/test.sh and no grader= was "
            "given to HarborBackend",
            RolloutErrorCategory.VALIDATION_ERROR,
            sample=workflow.sample,
            extra=extra,
        )
    if facts.graded_by == "sdk" and facts.grader_result is not None:
        return _runner_result(facts.grader_result, facts.request.label, extra, "grader failed")
    exc = result.exception_info
    if exc is not None:
        message = f"task verifier failed: {exc.exception_type}: {exc.exception_message}"
        err_category = (
            RolloutErrorCategory.TIMEOUT
            if exc.exception_type == "VerifierTimeoutError"
            else RolloutErrorCategory.AGENT_ERROR
        )
        return failure(message, err_category, sample=workflow.sample, extra=extra)
    rewards = dict(result.verifier_result.rewards or {}) if result.verifier_result else {}
    reward, problem = facts.reward_rule.derive(rewards)
    if reward is None:
        return failure(
            f"{problem} (rewards: {rewards})",
            RolloutErrorCategory.VALIDATION_ERROR,
            sample=workflow.sample,
            extra=extra,
        )
    extra["harbor_rewards"] = rewards
    if workflow.sample is None:
        return validate_reward(None, extra)  # the one rule: no sample is never a reward
    sample = workflow.sample.model_copy(deep=True)
    sample.metrics = {
        **sample.metrics,
        **{f"{REWARD_METRIC_PREFIX}{k}": v for k, v in rewards.items()},
    }
    sample.reward = reward
    return validate_reward(sample, extra)
