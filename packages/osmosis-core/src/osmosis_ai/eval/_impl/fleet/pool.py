"""The fleet of rollout servers an evaluation drives: who has free capacity, who failed.

Each :class:`Member` is one server with its own :class:`RolloutClient`. A rollout takes a slot
on the member with the most free slots; a member's slots are its capacity from ``/health``,
less what ``/health`` says it runs for other controllers (a fleet shared with a trainer),
shrunk to what it is running when it answers ``429`` (admission is then retried by the client)
and grown back by one per finished rollout, so rows spread by each server's real free capacity.

A member *fails* when it stops answering ``/health`` (``misses_allowed`` probes in a row), when
an admission or a poll cannot reach it and a probe confirms it, or when it refuses our key or
cancels our rollouts (it is shutting down). A failed member is never used again in the run: its
running attempts are cancelled locally, and :mod:`osmosis_ai.eval._impl.fleet.client` re-dispatches them to the
others. A member that reports ``accepting_rollouts: false`` (draining) gets no new work but
keeps its running rollouts.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from osmosis_ai.errors import EvalError
from osmosis_ai.eval._impl.fleet.servers import server_capacity

if TYPE_CHECKING:
    from osmosis_ai.rollout.client import RolloutClient

#: Slots of a server whose ``/health`` says nothing about its capacity.
DEFAULT_SERVER_CAPACITY = 8

EventSink = Callable[[str, str, dict[str, Any]], None]


class FleetExhausted(EvalError):
    """Every rollout server of the fleet failed (or is draining); the message lists why."""


@dataclass(eq=False, slots=True)
class Member:
    url: str
    client: RolloutClient
    capacity: int = DEFAULT_SERVER_CAPACITY
    limit: float = DEFAULT_SERVER_CAPACITY
    in_flight: int = 0
    dispatched: int = 0
    completed: int = 0
    redispatched: int = 0
    busy_answers: int = 0
    misses: int = 0
    #: Rollouts the server runs for other controllers (its ``/health`` count minus ours).
    others: int = 0
    draining: bool = False
    failure: str | None = None
    failed_at: float | None = None
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    @property
    def alive(self) -> bool:
        return self.failure is None

    @property
    def free(self) -> float:
        return self.limit - self.in_flight - self.others

    def on_busy(self) -> None:
        """A ``429``: take no more than it is running now (at least one) until rollouts finish."""
        self.busy_answers += 1
        self.limit = max(1.0, float(self.in_flight - 1))

    def set_capacity(self, capacity: int) -> None:
        if capacity != self.capacity:
            self.limit = min(self.limit, capacity) if self.limit < self.capacity else capacity
            self.capacity = capacity

    def summary(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "status": "failed" if self.failure else "draining" if self.draining else "ok",
            "capacity": self.capacity,
            "dispatched": self.dispatched,
            "completed": self.completed,
            "redispatched": self.redispatched,
            "busy_answers": self.busy_answers,
            "failure": self.failure,
        }


class Fleet:
    """Slot accounting, health watching and failure handling over the members."""

    def __init__(
        self,
        members: list[Member],
        *,
        on_event: EventSink,
        health_interval_sec: float = 1.0,
        health_timeout_sec: float = 3.0,
        misses_allowed: int = 3,
    ) -> None:
        self.members = members
        self._on_event = on_event
        self._interval = health_interval_sec
        self._timeout = health_timeout_sec
        self._misses_allowed = misses_allowed
        self._changed = asyncio.Event()

    @property
    def total_capacity(self) -> int:
        return sum(m.capacity for m in self.members if m.alive)

    def any_alive(self) -> bool:
        return any(m.alive for m in self.members)

    # ---- slots ---------------------------------------------------------------------------------

    async def acquire(self) -> Member:
        """A slot on the member with the most free slots; waits while all are full."""
        while True:
            usable = [m for m in self.members if m.alive and not m.draining]
            if not usable:
                raise FleetExhausted(self.describe_failures())
            best = max(usable, key=lambda m: m.free)
            if best.free >= 1:
                best.in_flight += 1
                best.dispatched += 1
                return best
            self._changed.clear()
            await self._changed.wait()

    def release(self, member: Member, *, finished: bool) -> None:
        member.in_flight -= 1
        if finished:
            member.completed += 1
            member.limit = min(float(member.capacity), member.limit + 1)
        self._changed.set()

    # ---- failures ------------------------------------------------------------------------------

    def fail(self, member: Member, reason: str) -> None:
        """Stop using ``member``; its running attempts are cancelled (and re-dispatched)."""
        if not member.alive:
            return
        member.failure = reason
        member.failed_at = time.time()
        running = len(member.tasks)
        for task in list(member.tasks):
            task.cancel()
        self._on_event(
            "warning",
            f"rollout server {member.url} failed ({reason}); its rollouts go to the other servers",
            {"code": "SERVER_FAILED", "server": member.url, "reason": reason, "running": running},
        )
        self._changed.set()

    async def probe(self, member: Member) -> str | None:
        """One ``/health`` request; the problem, or ``None`` when it answered 200."""
        from osmosis_ai.rollout.client import RolloutProtocolError

        try:
            async with asyncio.timeout(self._timeout):
                health = await member.client.health()
        except TimeoutError:
            return f"/health did not answer within {self._timeout:g}s"
        except RolloutProtocolError as exc:
            if exc.status_code in (401, 403):
                return (
                    f"/health answered {exc.status_code}: the server wants another inbound key "
                    "(set OSMOSIS_ROLLOUT_API_KEY to the key the servers were started with)"
                )
            return str(exc)
        except (httpx.HTTPError, OSError) as exc:
            return f"{type(exc).__name__}: {exc}".rstrip(": ")
        capacity = server_capacity(health)
        if capacity is not None:
            member.set_capacity(capacity)
        lifecycle = health.get("lifecycle")
        active = lifecycle.get("active_rollouts") if isinstance(lifecycle, dict) else None
        if isinstance(active, int) and not isinstance(active, bool):
            member.others = max(0, active - member.in_flight)  # a shared server's other load
        draining = isinstance(lifecycle, dict) and lifecycle.get("accepting_rollouts") is False
        if draining and not member.draining:
            member.draining = True
            self._on_event(
                "warning",
                "rollout server is draining; it gets no new rollouts",
                {"code": "SERVER_DRAINING", "server": member.url},
            )
            self._changed.set()
        return None

    async def confirm_down(self, member: Member, error: BaseException) -> None:
        """After a transport error: probe once; a failed probe fails the member."""
        if not member.alive:
            return
        problem = await self.probe(member)
        if problem is not None:
            self.fail(member, f"{type(error).__name__}: {error}; then {problem}".strip())

    async def watch(self) -> None:
        """Probe every live member each interval; ``misses_allowed`` misses in a row fail it."""
        while True:
            await asyncio.sleep(self._interval)
            live = [m for m in self.members if m.alive]
            problems = await asyncio.gather(*(self.probe(m) for m in live))
            for member, problem in zip(live, problems, strict=True):
                if problem is None:
                    member.misses = 0
                    continue
                member.misses += 1
                if member.misses >= self._misses_allowed:
                    self.fail(member, f"stopped answering ({problem})")

    async def start(self) -> list[str]:
        """Probe every member once; fail those that do not answer. Returns the problems."""
        problems = await asyncio.gather(*(self.probe(m) for m in self.members))
        for member, problem in zip(self.members, problems, strict=True):
            if problem is not None:
                member.failure = f"not reachable at start: {problem}"
        for member in self.members:
            member.limit = float(member.capacity)
        return [f"{m.url}: {m.failure}" for m in self.members if m.failure]

    def describe_failures(self) -> str:
        lines = [
            f"{m.url}: {m.failure or 'draining'}"
            for m in self.members
            if m.failure is not None or m.draining
        ]
        return "every rollout server failed or is draining: " + "; ".join(lines)

    def summaries(self) -> list[dict[str, Any]]:
        return [m.summary() for m in self.members]


@contextlib.asynccontextmanager
async def watching(fleet: Fleet) -> AsyncIterator[Fleet]:
    """Run :meth:`Fleet.watch` for the duration of the block."""
    task = asyncio.create_task(fleet.watch())
    try:
        yield fleet
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
