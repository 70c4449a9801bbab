"""When and how long the judge waits before trying a failed call again."""

from __future__ import annotations

from collections.abc import Mapping

from osmosis_ai._util.backoff import Backoff, parse_retry_after

#: HTTP statuses worth retrying: timeout, conflict, rate limit, server errors.
RETRY_STATUSES = frozenset({408, 409, 429})
#: The longest ``Retry-After`` honoured; a provider asking for more gets this (then a retry).
MAX_RETRY_AFTER_S = 60.0


def is_retryable(status: int | None) -> bool:
    return status is None or status in RETRY_STATUSES or status >= 500


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), if any."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return _bounded(float(raw_ms) / 1000.0)
        except ValueError:
            pass
    seconds = parse_retry_after(lowered.get("retry-after"))
    return None if seconds is None else _bounded(seconds)


def _bounded(seconds: float) -> float:
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def backoff(attempt: int, base: float, cap: float = 8.0) -> float:
    """Exponential backoff with equal jitter for the ``attempt``-th retry (1-based)."""
    return Backoff(base, cap).delay(attempt)
