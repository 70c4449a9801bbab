"""``AgentWorkflowOutput``: what ``AgentWorkflow.run`` may return."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


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
