"""Translate failures of the policy endpoint into osmosis' failure taxonomy.

A rollout whose policy server is down, slow or answering 5xx is an *infrastructure* failure: it
must be reported as ``http_error`` or ``timeout`` so the trainer retries or drops it, never as a
reward of 0. The ``openai`` client raises its own exception types (and, mid-stream, the raw
``httpx``/``httpx2`` transport errors), and Strands wraps whatever a model raises into an
``EventLoopException``. This module maps all of them onto :class:`PolicyHTTPError` (category
``http_error``) and :class:`PolicyTimeoutError` (a :class:`TimeoutError`, category ``timeout``).
"""

from __future__ import annotations

from osmosis_ai.rollout.errors import PolicyHTTPError

__all__ = ["PolicyHTTPError", "PolicyTimeoutError", "translate_policy_error"]

# Top-level modules whose exceptions mean "the HTTP exchange with the policy failed".
_TRANSPORT_MODULES = frozenset({"httpx", "httpx2", "httpcore", "h11", "anyio"})
_BODY_EXCERPT_CHARS = 500


class PolicyTimeoutError(TimeoutError):
    """The policy endpoint did not answer within the model's ``timeout``."""

    def __init__(self, url: str, detail: str = "") -> None:
        self.url = url
        suffix = f": {detail}" if detail else ""
        super().__init__(f"policy call to {url} timed out{suffix}")


def _body_excerpt(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    text = ""
    if response is not None:
        try:
            text = response.text
        except Exception:  # a streamed body that was never read
            text = ""
    if not text:
        body = getattr(exc, "body", None)
        text = str(body) if body is not None else ""
    if not text:
        text = str(getattr(exc, "message", "") or exc)
    return text.strip()[:_BODY_EXCERPT_CHARS]


def translate_policy_error(exc: BaseException, url: str) -> BaseException | None:
    """The osmosis error for ``exc``, or ``None`` if ``exc`` is not a policy transport failure.

    Rate limiting (429) and context-window overflow are deliberately *not* translated by the
    caller: Strands turns them into ``ModelThrottledException`` (retried with back-off) and
    ``ContextWindowOverflowException`` (handled by the conversation manager), and a drop-in
    integration must keep those framework semantics.
    """
    if isinstance(exc, (PolicyHTTPError, PolicyTimeoutError)):
        return exc
    names = {cls.__name__ for cls in type(exc).__mro__}
    module_root = type(exc).__module__.split(".", 1)[0]
    if module_root == "openai":
        if "APITimeoutError" in names:
            return PolicyTimeoutError(url)
        status = getattr(exc, "status_code", None)
        if "APIStatusError" in names and isinstance(status, int):
            return PolicyHTTPError(status, _body_excerpt(exc), url)
        if "APIConnectionError" in names:
            cause = exc.__cause__ or exc.__context__
            detail = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
            return PolicyHTTPError(None, f"could not connect ({detail})", url)
        return None
    if module_root in _TRANSPORT_MODULES:
        detail = f"{type(exc).__name__}: {exc}".strip()
        if "Timeout" in type(exc).__name__:
            return PolicyTimeoutError(url, detail)
        return PolicyHTTPError(None, f"transport error ({detail})", url)
    return None
