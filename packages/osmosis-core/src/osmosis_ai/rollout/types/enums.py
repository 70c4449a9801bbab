"""The shared vocabularies: rollout lifecycle status and failure categories.

One vocabulary serves the server, the backends, ``osmosis eval run`` and training, so an
infrastructure failure can never be mistaken for an agent that earned reward 0.
"""

from __future__ import annotations

from enum import StrEnum


class RolloutStatus(StrEnum):
    """Lifecycle of one rollout; ``success``, ``failure`` and ``cancelled`` are terminal."""

    QUEUED = "queued"
    RUNNING = "running"
    GRADING = "grading"
    SUCCESS = "success"
    FAILURE = "failure"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL


_TERMINAL = frozenset({RolloutStatus.SUCCESS, RolloutStatus.FAILURE, RolloutStatus.CANCELLED})


class RolloutErrorCategory(StrEnum):
    """Why a rollout failed. Only ``agent_error`` and ``validation_error`` blame the rollout code.

    ``judge_error``: the grader's LLM judge failed after its retries (a ``JudgeError``); the
    rollout is ungraded, never reward 0.
    """

    TIMEOUT = "timeout"
    LEASE_EXPIRED = "lease_expired"
    VALIDATION_ERROR = "validation_error"
    HTTP_ERROR = "http_error"
    AGENT_ERROR = "agent_error"
    INTERNAL_ERROR = "internal_error"
    JUDGE_ERROR = "judge_error"


class GraderStatus(StrEnum):
    """Grader outcome in the 0.3.0 callback protocol."""

    PENDING = "pending"
    SUCCESS = "success"
    FAILURE = "failure"
