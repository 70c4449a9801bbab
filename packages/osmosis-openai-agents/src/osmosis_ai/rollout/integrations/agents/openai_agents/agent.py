"""``OsmosisAgent``: ``agents.Agent`` that always talks to the policy being trained."""

from __future__ import annotations

import logging

from agents import Agent
from agents.models.interface import Model

from .model import rollout_model_for

logger = logging.getLogger(__name__)


class OsmosisAgent[TContext](Agent[TContext]):
    """A drop-in ``agents.Agent`` for rollouts.

    Construct it exactly like ``Agent`` (``OsmosisAgent(name=..., instructions=...,
    model=OsmosisRolloutModel(), model_settings=ModelSettings(...), tools=[...])``). The only
    difference: a missing model or a model *name* becomes :class:`OsmosisRolloutModel`, so the
    agent can never fall through to the SDK's default provider (api.openai.com) during
    training. ``clone()`` and ``dataclasses.replace`` keep the type and re-apply this rule.
    """

    def __post_init__(self) -> None:
        self.model = rollout_model_for(self.model)
        super().__post_init__()
        for target in self.handoffs:
            if isinstance(target, Agent) and not isinstance(target.model, Model):
                logger.warning(
                    "handoff target %r of agent %r has no Model instance (model=%r): it would "
                    "call the SDK's default provider, not the policy. Make it an OsmosisAgent "
                    "or give it model=OsmosisRolloutModel()",
                    target.name,
                    self.name,
                    target.model,
                )


# 0.3 defined the public classes in the package module itself; report that path.
OsmosisAgent.__module__ = "osmosis_ai.rollout.integrations.agents.openai_agents"
