"""``AgentWorkflow``: the agent loop a rollout author writes."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.types.config import AgentWorkflowConfig
from osmosis_ai.rollout.types.output import coerce_output as coerce_output

if TYPE_CHECKING:
    from osmosis_ai.rollout.context import AgentWorkflowContext
    from osmosis_ai.rollout.types.output import AgentWorkflowOutput


class AgentWorkflow[TConfig: AgentWorkflowConfig](ABC):
    """Runs one rollout: prompt in, calls to the current policy, one sample out.

    ``run`` may return an :class:`AgentWorkflowOutput`, a plain message list, or ``None`` to let
    the rollout's registered sample source (an integration's agent or session) provide the
    sample. A fresh instance is created for every rollout, so instance state never leaks.
    """

    def __init__(self, config: TConfig | None = None) -> None:
        self.config = config

    @abstractmethod
    async def run(
        self, ctx: AgentWorkflowContext[TConfig]
    ) -> AgentWorkflowOutput | list[dict[str, Any]] | None: ...
