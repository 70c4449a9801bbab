"""Workflow and grader configuration models.

Configs allow extra fields and arbitrary types because rollout authors keep live objects in
them (a model placeholder, a list of tools) next to plain settings.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ConcurrencyConfig(BaseModel):
    """``max_concurrent`` caps how many rollouts of this workflow run at once (``None``: no cap)."""

    max_concurrent: int | None = Field(default=None, ge=1)


class BaseConfig(BaseModel):
    model_config = ConfigDict(extra="allow", validate_assignment=True, arbitrary_types_allowed=True)

    name: str
    description: str | None = None


class AgentWorkflowConfig(BaseConfig):
    concurrency: ConcurrencyConfig = Field(default_factory=ConcurrencyConfig)


class GraderConfig(BaseConfig):
    concurrency: ConcurrencyConfig = Field(default_factory=ConcurrencyConfig)
