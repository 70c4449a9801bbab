"""``parse_retry_after``: the one reading of an HTTP ``Retry-After`` header.

Used wherever osmosis honours it (the rollout client's admission retries, the server's
callbacks, the LLM judge, the CLI's platform client). Each caller keeps its own bounds and
fallback; this module only says how many seconds the header asks for.
"""

from __future__ import annotations

import math

__all__ = ["parse_retry_after"]


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait (``>= 0``) from ``Retry-After``: delay-seconds or an HTTP date.

    ``None`` when the header is absent, empty or not understood (also NaN or infinity); a date
    in the past or a negative number gives ``0.0``.
    """
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        return _seconds_until(value)
    if not math.isfinite(seconds):
        return None
    return max(seconds, 0.0)


def _seconds_until(value: str) -> float | None:
    from datetime import UTC, datetime
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)
