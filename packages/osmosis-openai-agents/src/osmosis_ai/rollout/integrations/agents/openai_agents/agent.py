"""``OsmosisAgent``: ``agents.Agent`` that always talks to the policy being trained."""

from __future__ import annotations

import logging
from typing import Any

from agents import Agent
from agents.models.interface import Model

from osmosis_ai.rollout.integrations.spi import record_tool_error

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
        for candidate in self.tools:
            record_tool_errors_of(candidate)
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


_RECORDING = "_osmosis_records_tool_errors"


def record_tool_errors_of(candidate: object) -> None:
    """Make a function tool record the exceptions it raises in the rollout
    (:func:`~osmosis_ai.rollout.integrations.spi.record_tool_error`), then answer the model as
    it would have (its ``failure_error_function``, by default the SDK's error message). A tool
    whose failures end the run (``failure_error_function=None``) is left alone: the run fails
    with the exception. Idempotent; a no-op on SDK versions without the formatter hooks."""
    try:
        from agents.tool import (
            FunctionTool,
            resolve_function_tool_failure_error_function,
            set_function_tool_failure_error_function,
        )
    except ImportError:  # an SDK whose failure formatting this does not know
        return
    if not isinstance(candidate, FunctionTool) or getattr(candidate, _RECORDING, False):
        return
    original = resolve_function_tool_failure_error_function(candidate)
    if original is None:
        return
    name = candidate.name

    def recording(context: Any, error: Exception) -> Any:
        record_tool_error(name, error, call_id=getattr(context, "tool_call_id", None))
        return original(context, error)

    set_function_tool_failure_error_function(candidate, recording)
    setattr(candidate, _RECORDING, True)


# 0.3 defined the public classes in the package module itself; report that path.
OsmosisAgent.__module__ = "osmosis_ai.rollout.integrations.agents.openai_agents"
