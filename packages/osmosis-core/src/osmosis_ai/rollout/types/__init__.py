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
