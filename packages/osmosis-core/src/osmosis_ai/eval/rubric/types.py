"""0.3's ``osmosis_ai.eval.rubric.types`` path: the result and error classes."""

from __future__ import annotations

from osmosis_ai.eval.judge.errors import (
    MissingAPIKeyError,
    ModelNotFoundError,
    ProviderRequestError,
)
from osmosis_ai.eval.judge.result import RubricResult

__all__ = ["MissingAPIKeyError", "ModelNotFoundError", "ProviderRequestError", "RubricResult"]
