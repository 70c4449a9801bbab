"""What a backend is asked to run and what it reports back.

These are in-process values (not wire models), so they are plain dataclasses: the server builds
one ``ExecutionRequest`` per admitted rollout and a pydantic model would cost CPU on the hot path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from osmosis_ai.rollout.identifiers import validate_rollout_id
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.sample import RolloutSample

_SUCCESS = RolloutStatus.SUCCESS


def _check_timeout(name: str, value: float | None) -> None:
    if value is not None and not math.isfinite(value):
        raise ValueError(f"{name} must be finite; omit it to run unbounded")


@dataclass(slots=True)
class ExecutionRequest:
    """One rollout to execute.

    ``agent_timeout_sec`` counts from admission (time spent queued uses up the budget);
    ``grader_timeout_sec`` is the grader's own budget. ``None`` means unbounded; zero or a
    negative value means the deadline has already passed. ``grade=False`` skips grading.

    ``chat_completions_url`` and ``api_key`` are the policy endpoint the rollout's code calls;
    the backend enters a :class:`~osmosis_ai.rollout.context.RolloutContext` carrying them
    around user code (empty values fall back to the caller's active context, then to the
    ``OSMOSIS_*`` environment). ``process_id`` is the serving rollout server's ``/health``
    ``process_id`` (``None`` outside a server).
    """

    id: str
    prompt: list[dict[str, Any]]
    label: str | None = None
    metadata: dict[str, Any] | None = None
    agent_timeout_sec: float | None = None
    grader_timeout_sec: float | None = None
    grade: bool = True
    chat_completions_url: str = ""
    api_key: str | None = field(default=None, repr=False)
    process_id: str | None = None

    def __post_init__(self) -> None:
        validate_rollout_id(self.id)
        _check_timeout("agent_timeout_sec", self.agent_timeout_sec)
        _check_timeout("grader_timeout_sec", self.grader_timeout_sec)


@dataclass(slots=True)
class ExecutionResult:
    """The outcome of one phase (workflow or grader).

    ``extra_fields`` carries diagnostics that are saved next to the trajectory, never sent on
    the wire.
    """

    status: RolloutStatus
    sample: RolloutSample | None = None
    err_message: str | None = None
    err_category: RolloutErrorCategory | None = None
    extra_fields: dict[str, Any] | None = field(default=None)

    @property
    def wire_reward(self) -> float | None:
        """The reward the controller sees for this result: the sample's reward for a
        ``success`` whose sample is kept, otherwise ``None`` (failures never carry one)."""
        sample = self.sample
        if self.status != _SUCCESS or sample is None or sample.remove_sample:
            return None
        return sample.reward


@dataclass(slots=True)
class ExecutionOutcome:
    """Both phases of one rollout; ``result`` is what the controller receives."""

    workflow: ExecutionResult
    grader: ExecutionResult | None = None

    @property
    def result(self) -> ExecutionResult:
        if self.workflow.status != RolloutStatus.SUCCESS:
            if self.workflow.sample is None and self.grader is not None and self.grader.sample:
                return ExecutionResult(
                    status=self.workflow.status,
                    sample=self.grader.sample,
                    err_message=self.workflow.err_message,
                    err_category=self.workflow.err_category,
                    extra_fields=self.workflow.extra_fields,
                )
            return self.workflow
        return self.grader if self.grader is not None else self.workflow

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
