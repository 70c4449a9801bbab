"""Mapping exceptions raised by rollout code to a :class:`RolloutErrorCategory`."""

from __future__ import annotations

from osmosis_ai.errors import JudgeError, PolicyHTTPError
from osmosis_ai.rollout.types.enums import RolloutErrorCategory

# ``PolicyHTTPError`` lived here in 0.3; it is defined in :mod:`osmosis_ai.errors` now and
# re-exported so ``from osmosis_ai.rollout.errors import PolicyHTTPError`` keeps working.
__all__ = ["PolicyHTTPError", "categorize_exception", "describe_exception"]

# Sandbox providers' exception class names that mean "the infrastructure failed", matched by
# name so that no provider SDK has to be importable here.
_ALWAYS_HTTP = frozenset(
    {
        "SandboxConnectionException",
        "SandboxRateLimitException",
        "PoolStateStoreUnavailableException",
    }
)
_HTTP_IF_STATUS = frozenset({"SandboxApiException", "SandboxAPIError"})
_HTTP_STATUSES = frozenset({401, 402, 403, 429, 500, 502, 503, 504})
# OpenAI-client errors that mean the policy endpoint failed rather than the agent's logic.
_POLICY_HTTP = frozenset(
    {"APIStatusError", "APIConnectionError", "APITimeoutError", "PolicyHTTPError"}
)


def categorize_exception(exc: BaseException) -> RolloutErrorCategory:
    """Classify ``exc``: judge, timeout, validation, HTTP (infrastructure) or agent error."""
    if isinstance(exc, JudgeError):
        # Before the timeout check: a judge that timed out is a judge failure, not the rollout's.
        return RolloutErrorCategory.JUDGE_ERROR
    names = [cls.__name__ for cls in type(exc).__mro__]
    for name in names:
        if name in _ALWAYS_HTTP:
            return RolloutErrorCategory.HTTP_ERROR
        if name in _HTTP_IF_STATUS:
            status = getattr(exc, "status_code", None)
            if isinstance(status, int) and status in _HTTP_STATUSES:
                return RolloutErrorCategory.HTTP_ERROR
    if isinstance(exc, TimeoutError) or "APITimeoutError" in names:
        return RolloutErrorCategory.TIMEOUT
    if any(name in _POLICY_HTTP for name in names):
        return RolloutErrorCategory.HTTP_ERROR
    if isinstance(exc, (ValueError, TypeError, AssertionError)):
        return RolloutErrorCategory.VALIDATION_ERROR
    return RolloutErrorCategory.AGENT_ERROR


def describe_exception(exc: BaseException) -> str:
    """A one-line message for a failure result: the exception text, or its type if empty."""
    text = str(exc).strip()
    return text if text else type(exc).__name__
