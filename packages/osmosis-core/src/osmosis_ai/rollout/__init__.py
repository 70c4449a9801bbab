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
    "PolicyEndpoint": "osmosis_ai.rollout.policy_endpoint",
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

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names as _EXPORTS (checked by a core test)
    from osmosis_ai.rollout.agent_workflow import AgentWorkflow as AgentWorkflow
    from osmosis_ai.rollout.backend.base import ExecutionBackend as ExecutionBackend
    from osmosis_ai.rollout.backend.local import LocalBackend as LocalBackend
    from osmosis_ai.rollout.context import AgentWorkflowContext as AgentWorkflowContext
    from osmosis_ai.rollout.context import GraderContext as GraderContext
    from osmosis_ai.rollout.context import RolloutContext as RolloutContext
    from osmosis_ai.rollout.context import RolloutProgress as RolloutProgress
    from osmosis_ai.rollout.context import SampleSource as SampleSource
    from osmosis_ai.rollout.context import get_rollout_context as get_rollout_context
    from osmosis_ai.rollout.grader import Grader as Grader
    from osmosis_ai.rollout.policy_endpoint import PolicyEndpoint as PolicyEndpoint
    from osmosis_ai.rollout.types import AgentWorkflowConfig as AgentWorkflowConfig
    from osmosis_ai.rollout.types import AgentWorkflowOutput as AgentWorkflowOutput
    from osmosis_ai.rollout.types import BaseConfig as BaseConfig
    from osmosis_ai.rollout.types import ConcurrencyConfig as ConcurrencyConfig
    from osmosis_ai.rollout.types import ExecutionOutcome as ExecutionOutcome
    from osmosis_ai.rollout.types import ExecutionRequest as ExecutionRequest
    from osmosis_ai.rollout.types import ExecutionResult as ExecutionResult
    from osmosis_ai.rollout.types import GraderCompleteRequest as GraderCompleteRequest
    from osmosis_ai.rollout.types import GraderConfig as GraderConfig
    from osmosis_ai.rollout.types import GraderInitRequest as GraderInitRequest
    from osmosis_ai.rollout.types import GraderInitResponse as GraderInitResponse
    from osmosis_ai.rollout.types import GraderStatus as GraderStatus
    from osmosis_ai.rollout.types import MessageDict as MessageDict
    from osmosis_ai.rollout.types import Messages as Messages
    from osmosis_ai.rollout.types import RolloutCompleteRequest as RolloutCompleteRequest
    from osmosis_ai.rollout.types import RolloutErrorCategory as RolloutErrorCategory
    from osmosis_ai.rollout.types import RolloutInitRequest as RolloutInitRequest
    from osmosis_ai.rollout.types import RolloutInitResponse as RolloutInitResponse
    from osmosis_ai.rollout.types import RolloutResultResponse as RolloutResultResponse
    from osmosis_ai.rollout.types import RolloutSample as RolloutSample
    from osmosis_ai.rollout.types import RolloutStatus as RolloutStatus
