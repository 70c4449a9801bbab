"""What a backend is asked to run and what it reports back.

Pydantic models, as in osmosis-ai 0.3.8: ``model_dump()``, ``model_copy()`` and
``model_validate()`` work, and invalid input (an id such as ``../other``, a non-finite timeout)
raises ``pydantic.ValidationError``. The server validates the ones it builds too: pydantic-core's
validation is cheaper than ``model_construct`` (which runs in Python).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from osmosis_ai.rollout.identifiers import validate_rollout_id
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.protocol import TimeoutSec
from osmosis_ai.rollout.types.sample import RolloutSample

_SUCCESS = RolloutStatus.SUCCESS


class ExecutionRequest(BaseModel):
    """One rollout to execute.

    ``agent_timeout_sec`` counts from admission (time spent queued uses up the budget);
    ``grader_timeout_sec`` is the grader's own budget. ``None`` means unbounded; zero or a
    negative value means the deadline has already passed. ``grade=False`` skips grading.

    ``chat_completions_url`` and ``api_key`` are the policy endpoint the rollout's code calls;
    the backend enters a :class:`~osmosis_ai.rollout.context.RolloutContext` carrying them
    around user code (empty values fall back to the caller's active context, then to the
    ``OSMOSIS_*`` environment). ``api_key`` is left out of ``repr`` and ``model_dump``.
    ``process_id`` is the serving rollout server's ``/health`` ``process_id`` (``None``
    outside a server).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str
    prompt: list[dict[str, Any]]
    label: str | None = None
    metadata: dict[str, Any] | None = None
    agent_timeout_sec: TimeoutSec = None
    grader_timeout_sec: TimeoutSec = None
    grade: bool = True
    chat_completions_url: str = ""
    api_key: str | None = Field(default=None, repr=False, exclude=True)
    process_id: str | None = None

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        return validate_rollout_id(value)


class ExecutionResult(BaseModel):
    """The outcome of one phase (workflow or grader).

    ``extra_fields`` carries diagnostics that are saved next to the trajectory, never sent on
    the wire.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    status: RolloutStatus
    sample: RolloutSample | None = None
    err_message: str | None = None
    err_category: RolloutErrorCategory | None = None
    extra_fields: dict[str, Any] | None = None

    @property
    def wire_reward(self) -> float | None:
        """The reward the controller sees for this result: the sample's reward for a
        ``success`` whose sample is kept, otherwise ``None`` (failures never carry one)."""
        sample = self.sample
        if self.status != _SUCCESS or sample is None or sample.remove_sample:
            return None
        return sample.reward


class ExecutionOutcome(BaseModel):
    """Both phases of one rollout; ``result`` is what the controller receives.

    ``ExecutionOutcome(workflow_result, grader_result)`` (positional, as when these were
    dataclasses) and the keyword form both work.
    """

    workflow: ExecutionResult
    grader: ExecutionResult | None = None

    def __init__(
        self,
        workflow: ExecutionResult | None = None,
        grader: ExecutionResult | None = None,
        /,
        **data: Any,
    ) -> None:
        if workflow is not None:
            data["workflow"] = workflow
        if grader is not None:
            data["grader"] = grader
        super().__init__(**data)

    @property
    def result(self) -> ExecutionResult:
        workflow = self.workflow
        grader = self.grader
        if workflow.status != _SUCCESS:
            if workflow.sample is None and grader is not None and grader.sample:
                return workflow.model_copy(update={"sample": grader.sample})
            return workflow
        return grader if grader is not None else workflow

    @property
    def wire_reward(self) -> float | None:
        """The reward the controller receives (``result.wire_reward``), defined once here."""
        return self.result.wire_reward

    @property
    def result_to_save(self) -> ExecutionResult:
        """The result whose sample goes into the trajectory (the graded one when it has one)."""
        if self.grader is not None and self.grader.sample is not None:
            return self.grader
        return self.workflow
