"""Waiting before a retry: :class:`Backoff` (the one exponential schedule with jitter) and
:func:`parse_retry_after` (the one reading of an HTTP ``Retry-After`` header).

Every retry loop in osmosis takes its delays from a :class:`Backoff` (the server's callbacks,
the eval proxy's upstream calls, the LLM judge, the rollout client's gateway retries, the CLI's
platform client, Harbor's sandbox creation); each caller keeps its own numbers, attempt limit,
budget and ``Retry-After`` bounds. Jitter comes from a private random generator, so a retry
never moves the global ``random`` state (a rollout seeding ``random`` stays reproducible).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Backoff", "Jitter", "parse_retry_after"]

#: ``none``: the exact schedule; ``equal``: each delay drawn between half of it and all of it
#: (never above the cap, never near zero).
type Jitter = Literal["none", "equal"]

_RNG = random.Random()  # jitter, not security; never the global generator


@dataclass(frozen=True, slots=True)
class Backoff:
    """``initial * multiplier**(retry-1)`` capped at ``cap``, then jittered."""

    initial: float
    cap: float = math.inf
    multiplier: float = 2.0
    jitter: Jitter = "equal"
    #: The generator the jitter draws from (tests pass a seeded one).
    rng: random.Random = field(default=_RNG, repr=False, compare=False)

    def full(self, retry: int) -> float:
        """The un-jittered delay before the ``retry``-th retry (1-based)."""
        exponent = min(max(retry, 1) - 1, 64)  # past 2**64 every cap has long been reached
        return min(self.cap, self.initial * self.multiplier**exponent)

    def delay(self, retry: int) -> float:
        """Seconds to wait before the ``retry``-th retry (1-based)."""
        full = self.full(retry)
        if self.jitter == "equal":
            return full / 2 + self.rng.uniform(0.0, full / 2)
        return full


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
