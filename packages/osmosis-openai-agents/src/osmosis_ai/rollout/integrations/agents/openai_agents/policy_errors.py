"""Turning ``openai`` client failures into osmosis's policy errors.

A failing policy endpoint is an infrastructure problem, not something the agent did, so it must
be reported as ``http_error`` (or ``timeout``), never as an agent that earned reward 0. The
``openai`` exceptions carry the status but their text is generic; :class:`PolicyHTTPError`
carries the status, an excerpt of the body (what the server said) and the URL (which holds no
secret: the rollout id only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai.rollout.errors import PolicyHTTPError

if TYPE_CHECKING:
    import openai


class PolicyTimeoutError(PolicyHTTPError, TimeoutError):
    """The policy endpoint did not answer within the client timeout (category ``timeout``)."""


def _body_excerpt(exc: openai.APIStatusError) -> str:
    try:
        text = exc.response.text
    except Exception:  # a streamed response whose body was never read
        text = ""
    return (text or exc.message or "").strip()


def policy_error(exc: openai.APIError, url: str) -> PolicyHTTPError | None:
    """The osmosis error for ``exc``, or ``None`` when it is not a transport/HTTP failure."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        return PolicyHTTPError(exc.status_code, _body_excerpt(exc), url)
    if isinstance(exc, openai.APITimeoutError):
        return PolicyTimeoutError(None, "the request timed out before the policy answered", url)
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        detail = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
        return PolicyHTTPError(None, f"could not reach the policy ({detail})", url)
    return None
