"""Data types of the rollout contract: samples, outputs, configs, enums and wire models."""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai._lazy import lazy_exports

_P = __name__
_EXPORTS = {
    "RolloutStatus": f"{_P}.enums",
    "RolloutErrorCategory": f"{_P}.enums",
    "GraderStatus": f"{_P}.enums",
    "MessageDict": f"{_P}.messages",
    "Messages": f"{_P}.messages",
    "RolloutSample": f"{_P}.sample",
    "AgentWorkflowOutput": f"{_P}.output",
    "BaseConfig": f"{_P}.config",
    "AgentWorkflowConfig": f"{_P}.config",
    "GraderConfig": f"{_P}.config",
    "ConcurrencyConfig": f"{_P}.config",
    "ExecutionRequest": f"{_P}.execution",
    "ExecutionResult": f"{_P}.execution",
    "ExecutionOutcome": f"{_P}.execution",
    "POLLING_LEASE_HEADER": f"{_P}.protocol",
    "RolloutInitRequest": f"{_P}.protocol",
    "RolloutInitResponse": f"{_P}.protocol",
    "RolloutResultResponse": f"{_P}.protocol",
    "CancelRolloutsRequest": f"{_P}.protocol",
    "CancelRolloutsResponse": f"{_P}.protocol",
    "RolloutLifecycle": f"{_P}.protocol",
    "RolloutStatusResponse": f"{_P}.protocol",
    "RolloutCompleteRequest": f"{_P}.protocol",
    "GraderCompleteRequest": f"{_P}.protocol",
    "GraderInitRequest": f"{_P}.protocol",
    "GraderInitResponse": f"{_P}.protocol",
}

__all__ = [
    "POLLING_LEASE_HEADER",
    "AgentWorkflowConfig",
    "AgentWorkflowOutput",
    "BaseConfig",
    "CancelRolloutsRequest",
    "CancelRolloutsResponse",
    "ConcurrencyConfig",
    "ExecutionOutcome",
    "ExecutionRequest",
    "ExecutionResult",
    "GraderCompleteRequest",
    "GraderConfig",
    "GraderInitRequest",
    "GraderInitResponse",
    "GraderStatus",
    "MessageDict",
    "Messages",
    "RolloutCompleteRequest",
    "RolloutErrorCategory",
    "RolloutInitRequest",
    "RolloutInitResponse",
    "RolloutLifecycle",
    "RolloutResultResponse",
    "RolloutSample",
    "RolloutStatus",
    "RolloutStatusResponse",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from osmosis_ai.rollout.types.config import (
        AgentWorkflowConfig,
        BaseConfig,
        ConcurrencyConfig,
        GraderConfig,
    )
    from osmosis_ai.rollout.types.enums import GraderStatus, RolloutErrorCategory, RolloutStatus
    from osmosis_ai.rollout.types.execution import (
        ExecutionOutcome,
        ExecutionRequest,
        ExecutionResult,
    )
    from osmosis_ai.rollout.types.messages import MessageDict, Messages
    from osmosis_ai.rollout.types.output import AgentWorkflowOutput
    from osmosis_ai.rollout.types.protocol import (
        POLLING_LEASE_HEADER,
        CancelRolloutsRequest,
        CancelRolloutsResponse,
        GraderCompleteRequest,
        GraderInitRequest,
        GraderInitResponse,
        RolloutCompleteRequest,
        RolloutInitRequest,
        RolloutInitResponse,
        RolloutLifecycle,
        RolloutResultResponse,
        RolloutStatusResponse,
    )
    from osmosis_ai.rollout.types.sample import RolloutSample
