"""Data types of the rollout contract: samples, outputs, configs, enums and wire models."""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai._lazy import exports_from, lazy_exports

_P = __name__
_EXPORTS = exports_from(
    {
        f"{_P}.enums": "RolloutStatus RolloutErrorCategory GraderStatus",
        f"{_P}.messages": "MessageDict Messages",
        f"{_P}.sample": "RolloutSample",
        f"{_P}.output": "AgentWorkflowOutput",
        f"{_P}.config": "BaseConfig AgentWorkflowConfig GraderConfig ConcurrencyConfig",
        f"{_P}.execution": "ExecutionRequest ExecutionResult ExecutionOutcome",
        f"{_P}.protocol": (
            "POLLING_LEASE_HEADER RolloutInitRequest RolloutInitResponse RolloutResultResponse "
            "CancelRolloutsRequest CancelRolloutsResponse RolloutLifecycle RolloutStatusResponse "
            "RolloutCompleteRequest GraderCompleteRequest GraderInitRequest GraderInitResponse"
        ),
    }
)

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names as _EXPORTS (checked by a core test)
    from osmosis_ai.rollout.types.config import AgentWorkflowConfig as AgentWorkflowConfig
    from osmosis_ai.rollout.types.config import BaseConfig as BaseConfig
    from osmosis_ai.rollout.types.config import ConcurrencyConfig as ConcurrencyConfig
    from osmosis_ai.rollout.types.config import GraderConfig as GraderConfig
    from osmosis_ai.rollout.types.enums import GraderStatus as GraderStatus
    from osmosis_ai.rollout.types.enums import RolloutErrorCategory as RolloutErrorCategory
    from osmosis_ai.rollout.types.enums import RolloutStatus as RolloutStatus
    from osmosis_ai.rollout.types.execution import ExecutionOutcome as ExecutionOutcome
    from osmosis_ai.rollout.types.execution import ExecutionRequest as ExecutionRequest
    from osmosis_ai.rollout.types.execution import ExecutionResult as ExecutionResult
    from osmosis_ai.rollout.types.messages import MessageDict as MessageDict
    from osmosis_ai.rollout.types.messages import Messages as Messages
    from osmosis_ai.rollout.types.output import AgentWorkflowOutput as AgentWorkflowOutput
    from osmosis_ai.rollout.types.protocol import POLLING_LEASE_HEADER as POLLING_LEASE_HEADER
    from osmosis_ai.rollout.types.protocol import CancelRolloutsRequest as CancelRolloutsRequest
    from osmosis_ai.rollout.types.protocol import CancelRolloutsResponse as CancelRolloutsResponse
    from osmosis_ai.rollout.types.protocol import GraderCompleteRequest as GraderCompleteRequest
    from osmosis_ai.rollout.types.protocol import GraderInitRequest as GraderInitRequest
    from osmosis_ai.rollout.types.protocol import GraderInitResponse as GraderInitResponse
    from osmosis_ai.rollout.types.protocol import RolloutCompleteRequest as RolloutCompleteRequest
    from osmosis_ai.rollout.types.protocol import RolloutInitRequest as RolloutInitRequest
    from osmosis_ai.rollout.types.protocol import RolloutInitResponse as RolloutInitResponse
    from osmosis_ai.rollout.types.protocol import RolloutLifecycle as RolloutLifecycle
    from osmosis_ai.rollout.types.protocol import RolloutResultResponse as RolloutResultResponse
    from osmosis_ai.rollout.types.protocol import RolloutStatusResponse as RolloutStatusResponse
    from osmosis_ai.rollout.types.sample import RolloutSample as RolloutSample
