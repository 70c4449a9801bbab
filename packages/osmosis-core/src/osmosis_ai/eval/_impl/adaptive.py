"""An adaptive concurrency limit (AIMD) below a fixed ceiling: the one owner of that rule.

``osmosis eval run`` uses one for its policy calls (rows in flight; the signals come from the
policy proxy) and the LLM judge one per endpoint (its calls). The rule:

* start at the ceiling (a server that never pushes back runs exactly as with a fixed limit);
* **back off** on a congestion signal (HTTP 429 or 503, or a timeout): ``limit x 0.75``, at most
  once per round trip (signals from calls that started before the last decrease are the same
  congestion and are ignored), never below 1; a ``Retry-After`` also holds *new* acquisitions
  until it has passed (the retried call itself waits for it in its own retry loop);
* **grow** again on success: ``+1/limit`` per successful call, i.e. about one slot per round of
  calls, up to the ceiling, but only while the limit is what holds the calls back (callers are
  waiting for a slot, or the slots are all but full). A limit the callers do not use says nothing
  about what the server can take, so it does not grow (TCP's congestion-window validation, RFC
  7661): otherwise a slow stretch on the caller's side (a loaded machine, rows in back-off) lets
  it drift far above a server's cap and the next burst meets a wall of 429s.

A decrease of 0.75 (rather than TCP's 0.5) keeps the mean near a hard server cap: against a
server that refuses above 8, the limit saw-tooths between about 6.75 and 9 (mean ~8).

Everything runs on one event loop; no locks. Each change of ``in_flight``/``limit`` is sampled
into a bounded trace (time since start, in flight, limit) that the run writes to
``metrics.json``.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from typing import Any

#: Statuses that mean "too much at once" (or a gateway timing out): back off.
CONGESTION_STATUSES = frozenset({408, 429, 503, 504})
DECREASE = 0.75
#: The trace keeps at most this many points (it thins itself by halving when full).
TRACE_POINTS = 400


class AdaptiveLimit:
    """``await acquire()`` / ``release()`` like a semaphore whose size follows the signals."""

    def __init__(self, ceiling: int, *, name: str = "policy", floor: int = 1) -> None:
        self.name = name
        self.ceiling = max(1, ceiling)
        self.floor = max(1, min(floor, self.ceiling))
        self.limit = float(self.ceiling)
        self.in_flight = 0
        self.peak_in_flight = 0
        self.min_limit = self.limit
        self.decreases = 0
        self.congestion_signals = 0
        self.successes = 0
        self._paused_until = 0.0
        self._last_decrease = -math.inf
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._t0 = time.monotonic()
        self._trace: list[tuple[float, int, float]] = []
        self._trace_step = 0.01  # seconds between kept points; doubles when the trace is full
        self._sum_in_flight = 0.0  # time-weighted, for the mean
        self._last_change = self._t0

    # ---- slots -----------------------------------------------------------------------------

    def set_ceiling(self, ceiling: int) -> None:
        """Change the ceiling and start over at it (figures and trace too): the run knows its
        ceiling only once the rollout server is up, right before dispatch."""
        self.ceiling = max(1, ceiling)
        self.limit = self.min_limit = float(self.ceiling)
        self._t0 = self._last_change = time.monotonic()
        self._sum_in_flight = 0.0
        self._trace = []
        self._wake()

    def _room(self, now: float) -> bool:
        return self.in_flight < max(self.floor, int(self.limit)) and now >= self._paused_until

    async def acquire(self) -> float:
        """Wait for a slot; returns the acquisition time (pass it to :meth:`congested`)."""
        now = time.monotonic()
        while not self._room(now):
            if now < self._paused_until and self.in_flight < int(self.limit):
                await asyncio.sleep(self._paused_until - now)
            else:
                waiter = asyncio.get_running_loop().create_future()
                self._waiters.append(waiter)
                try:
                    await waiter
                except asyncio.CancelledError:
                    if waiter.done() and not waiter.cancelled():
                        self._wake()  # pass the wake-up on
                    raise
            now = time.monotonic()
        self._change(now, +1)
        return now

    def release(self) -> None:
        self._change(time.monotonic(), -1)
        self._wake()

    def _wake(self) -> None:
        room = max(self.floor, int(self.limit)) - self.in_flight
        while room > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                room -= 1

    # ---- signals ---------------------------------------------------------------------------

    def congested(self, started: float | None = None, retry_after: float | None = None) -> None:
        """A call answered 429/503 or timed out (``started``: when its slot was acquired)."""
        now = time.monotonic()
        self.congestion_signals += 1
        if started is None or started >= self._last_decrease:
            self.limit = max(float(self.floor), self.limit * DECREASE)
            self.min_limit = min(self.min_limit, self.limit)
            self._last_decrease = now
            self.decreases += 1
        if retry_after is not None and retry_after > 0:
            self._paused_until = max(self._paused_until, now + retry_after)
        self._sample(now)

    def succeeded(self) -> None:
        """A call succeeded (its slot held or just released: both count as in use)."""
        self.successes += 1
        if self.limit < self.ceiling and self._limited():
            self.limit = min(float(self.ceiling), self.limit + 1.0 / self.limit)
            self._wake()

    def _limited(self) -> bool:
        """Whether the limit is what holds the calls back: callers wait, or at most one slot
        is free (the call reporting success may have released its slot already)."""
        return bool(self._waiters) or self.in_flight + 1 >= int(self.limit)

    # ---- figures ---------------------------------------------------------------------------

    def _change(self, now: float, delta: int) -> None:
        self._sum_in_flight += self.in_flight * (now - self._last_change)
        self._last_change = now
        self.in_flight += delta
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        self._sample(now)

    def _sample(self, now: float) -> None:
        t = now - self._t0
        if self._trace and t - self._trace[-1][0] < self._trace_step:
            return
        self._trace.append((t, self.in_flight, self.limit))
        if len(self._trace) >= TRACE_POINTS:
            self._trace = self._trace[::2]
            self._trace_step *= 2

    @property
    def trace(self) -> list[tuple[float, int, float]]:
        return list(self._trace)

    def summary(self) -> dict[str, Any]:
        """Final figures for ``metrics.json`` (``trace``: ``[seconds, in flight, limit]`` points)."""
        now = time.monotonic()
        elapsed = now - self._t0
        total = self._sum_in_flight + self.in_flight * (now - self._last_change)
        return {
            "ceiling": self.ceiling,
            "final_limit": round(self.limit, 2),
            "min_limit": round(self.min_limit, 2),
            "peak_in_flight": self.peak_in_flight,
            "mean_in_flight": round(total / elapsed, 2) if elapsed > 0 else 0.0,
            "decreases": self.decreases,
            "congestion_signals": self.congestion_signals,
            "trace": [[round(t, 3), n, round(limit, 2)] for t, n, limit in self._trace],
        }
