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


def __getattr__(name: str) -> Any:
    # osmosis-ai 0.3.8's ``coerce_output`` lived here; it is the workflow's now (imported on
    # first use: agent_workflow imports this module).
    if name == "coerce_output":
        from osmosis_ai.rollout.agent_workflow import coerce_output

        return coerce_output
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
