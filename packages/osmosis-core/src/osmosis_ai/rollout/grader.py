"""``Grader``: turns a rollout's sample and the row's ground truth into one reward."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from osmosis_ai.rollout.context import GraderContext
    from osmosis_ai.rollout.types.config import GraderConfig


class Grader(ABC):
    """Reads ``ctx.sample`` and ``ctx.label`` (the row's ``ground_truth``) and calls
    ``ctx.set_reward(x)`` with a finite number. The return value is ignored.

    A missing label reaches the grader as ``None``; deciding what that means is the grader's
    job, never a silent failure.
    """

    def __init__(self, config: GraderConfig | None = None) -> None:
        self.config = config

    @abstractmethod
    async def grade(self, ctx: GraderContext) -> Any: ...
