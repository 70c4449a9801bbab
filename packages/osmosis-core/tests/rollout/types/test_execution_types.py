"""``ExecutionRequest`` / ``ExecutionResult`` / ``ExecutionOutcome`` are pydantic models (0.3.8)."""

from __future__ import annotations

import math

import pytest
from pydantic import BaseModel, ValidationError

from osmosis_ai.rollout import (
    ExecutionOutcome,
    ExecutionRequest,
    ExecutionResult,
    RolloutErrorCategory,
    RolloutSample,
    RolloutStatus,
)

PROMPT = [{"role": "user", "content": "6*7?"}]


def test_they_are_pydantic_models_with_dump_copy_and_validate() -> None:
    request = ExecutionRequest(id="r1", prompt=PROMPT, label="42", agent_timeout_sec=5)
    assert isinstance(request, BaseModel)
    dumped = request.model_dump()
    assert dumped["id"] == "r1"
    assert dumped["agent_timeout_sec"] == 5.0
    assert dumped["grade"] is True
    assert ExecutionRequest.model_validate(dumped) == request
    assert request.model_copy(update={"label": "x"}).label == "x"

    sample = RolloutSample(messages=[{"role": "assistant", "content": "42"}], reward=1.0)
    result = ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample)
    outcome = ExecutionOutcome(workflow=result)
    restored = ExecutionOutcome.model_validate(outcome.model_dump())
    assert restored.result.status == RolloutStatus.SUCCESS
    assert restored.result.sample is not None
    assert restored.result.sample.reward == 1.0
    assert ExecutionResult.model_validate({"status": "failure", "err_category": "timeout"}) == (
        ExecutionResult(status=RolloutStatus.FAILURE, err_category=RolloutErrorCategory.TIMEOUT)
    )


@pytest.mark.parametrize("bad_id", ["../other", "a/b", "..", ".", "", "a\\b"])
def test_an_unsafe_id_raises_validation_error(bad_id: str) -> None:
    with pytest.raises(ValidationError, match="single path segment"):
        ExecutionRequest(id=bad_id, prompt=PROMPT)


@pytest.mark.parametrize("field", ["agent_timeout_sec", "grader_timeout_sec"])
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_a_non_finite_timeout_raises_validation_error(field: str, value: float) -> None:
    with pytest.raises(ValidationError, match="timeout must be finite"):
        ExecutionRequest.model_validate({"id": "r1", "prompt": PROMPT, field: value})


def test_zero_or_negative_timeouts_are_allowed_and_mean_expired() -> None:
    assert ExecutionRequest(id="r1", prompt=PROMPT, agent_timeout_sec=0).agent_timeout_sec == 0
    assert ExecutionRequest(id="r1", prompt=PROMPT, grader_timeout_sec=-1).grader_timeout_sec == -1


def test_the_policy_key_stays_out_of_repr_and_dumps() -> None:
    request = ExecutionRequest(id="r1", prompt=PROMPT, api_key="sk-secret")
    assert request.api_key == "sk-secret"
    assert "sk-secret" not in repr(request)
    assert "api_key" not in request.model_dump()
    assert "sk-secret" not in request.model_dump_json()
    assert request.model_copy().api_key == "sk-secret"


def test_outcome_accepts_positional_phases_as_the_dataclass_did() -> None:
    workflow = ExecutionResult(status=RolloutStatus.SUCCESS)
    grader = ExecutionResult(status=RolloutStatus.FAILURE, err_message="bad")
    assert ExecutionOutcome(workflow, grader) == ExecutionOutcome(workflow=workflow, grader=grader)
    assert ExecutionOutcome(workflow).grader is None
    with pytest.raises(ValidationError):
        ExecutionOutcome()
