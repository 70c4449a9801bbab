"""``AgentWorkflowOutput``: what ``AgentWorkflow.run`` may return."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from osmosis_ai.rollout.types.messages import Messages as Messages


class AgentWorkflowOutput(BaseModel):
    """The sample a workflow returns explicitly.

    ``messages=None`` means "no sample". ``metrics`` must be finite numbers (re-validated when
    the instance is returned, so in-place edits are checked too). ``info`` is kept for the
    workflow's own diagnostics and is not shown to graders.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, revalidate_instances="always")

    messages: list[dict[str, Any]] | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    info: dict[str, Any] = Field(default_factory=dict)


def coerce_output(value: object) -> AgentWorkflowOutput | None:
    """Normalize what ``AgentWorkflow.run`` returned; anything but the three allowed shapes
    (an :class:`AgentWorkflowOutput`, a message list, ``None``) is a ``TypeError``. (0.3.8 had
    it here too; :mod:`osmosis_ai.rollout.agent_workflow` re-exports it.)"""
    if value is None:
        return None
    if isinstance(value, AgentWorkflowOutput):
        return AgentWorkflowOutput.model_validate(value)
    if isinstance(value, list):
        return AgentWorkflowOutput(messages=value)
    raise TypeError(
        "run() must return AgentWorkflowOutput, a message list, or None; "
        f"got {type(value).__name__}"
    )
