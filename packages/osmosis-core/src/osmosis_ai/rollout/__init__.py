"""The osmosis rollout API: what a rollout author writes and what runs it.

A rollout is one prompt run through an :class:`AgentWorkflow` against the current policy,
producing at most one :class:`RolloutSample`, which a :class:`Grader` turns into one finite
reward. Backends (:class:`LocalBackend`, ``HarborBackend``) execute rollouts; the rollout server
(:mod:`osmosis_ai.rollout.server`, extra ``server``) speaks the training cluster's protocol.

Names are resolved lazily so that ``import osmosis_ai.rollout`` stays fast; the import paths and
names are those of the public ``osmosis-ai`` 0.3 SDK.
"""

from __future__ import annotations

import pkgutil
from typing import TYPE_CHECKING

from osmosis_ai._lazy import lazy_exports

__path__ = pkgutil.extend_path(__path__, __name__)

_TYPES = "osmosis_ai.rollout.types"
_EXPORTS = {
    "AgentWorkflow": "osmosis_ai.rollout.agent_workflow",
    "Grader": "osmosis_ai.rollout.grader",
    "AgentWorkflowContext": "osmosis_ai.rollout.context",
    "GraderContext": "osmosis_ai.rollout.context",
    "RolloutContext": "osmosis_ai.rollout.context",
    "RolloutProgress": "osmosis_ai.rollout.context",
    "SampleSource": "osmosis_ai.rollout.context",
    "get_rollout_context": "osmosis_ai.rollout.context",
    "ExecutionBackend": "osmosis_ai.rollout.backend.base",
    "LocalBackend": "osmosis_ai.rollout.backend.local",
    "AgentWorkflowConfig": _TYPES,
    "AgentWorkflowOutput": _TYPES,
    "BaseConfig": _TYPES,
    "ConcurrencyConfig": _TYPES,
    "ExecutionOutcome": _TYPES,
    "ExecutionRequest": _TYPES,
    "ExecutionResult": _TYPES,
    "GraderConfig": _TYPES,
    "MessageDict": _TYPES,
    "Messages": _TYPES,
    "RolloutErrorCategory": _TYPES,
    "RolloutInitRequest": _TYPES,
    "RolloutInitResponse": _TYPES,
    "RolloutResultResponse": _TYPES,
    "RolloutSample": _TYPES,
    "RolloutStatus": _TYPES,
    # 0.3.0 callback-protocol names, kept so code written for 0.3.0 imports unchanged.
    "GraderCompleteRequest": _TYPES,
    "GraderInitRequest": _TYPES,
    "GraderInitResponse": _TYPES,
    "GraderStatus": _TYPES,
    "RolloutCompleteRequest": _TYPES,
}

__all__ = [
    "AgentWorkflow",
    "AgentWorkflowConfig",
    "AgentWorkflowContext",
    "AgentWorkflowOutput",
    "BaseConfig",
    "ConcurrencyConfig",
    "ExecutionBackend",
    "ExecutionOutcome",
    "ExecutionRequest",
    "ExecutionResult",
    "Grader",
    "GraderCompleteRequest",
    "GraderConfig",
    "GraderContext",
    "GraderInitRequest",
    "GraderInitResponse",
    "GraderStatus",
    "LocalBackend",
    "MessageDict",
    "Messages",
    "RolloutCompleteRequest",
    "RolloutContext",
    "RolloutErrorCategory",
    "RolloutInitRequest",
    "RolloutInitResponse",
    "RolloutProgress",
    "RolloutResultResponse",
    "RolloutSample",
    "RolloutStatus",
    "SampleSource",
    "get_rollout_context",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from osmosis_ai.rollout.agent_workflow import AgentWorkflow
    from osmosis_ai.rollout.backend.base import ExecutionBackend
    from osmosis_ai.rollout.backend.local import LocalBackend
    from osmosis_ai.rollout.context import (
        AgentWorkflowContext,
        GraderContext,
        RolloutContext,
        RolloutProgress,
        SampleSource,
        get_rollout_context,
    )
    from osmosis_ai.rollout.grader import Grader
    from osmosis_ai.rollout.types import (
        AgentWorkflowConfig,
        AgentWorkflowOutput,
        BaseConfig,
        ConcurrencyConfig,
        ExecutionOutcome,
        ExecutionRequest,
        ExecutionResult,
        GraderCompleteRequest,
        GraderConfig,
        GraderInitRequest,
        GraderInitResponse,
        GraderStatus,
        MessageDict,
        Messages,
        RolloutCompleteRequest,
        RolloutErrorCategory,
        RolloutInitRequest,
        RolloutInitResponse,
        RolloutResultResponse,
        RolloutSample,
        RolloutStatus,
    )
