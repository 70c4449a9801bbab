""":class:`FleetClient`: what the :class:`~osmosis_ai.eval._impl.scheduler.Scheduler` drives when an
evaluation runs on several rollout servers.

It offers the two calls the scheduler makes of a ``RolloutClient`` (``run_rollout_async`` and
``cancel_rollout``), so the scheduler's deadline, classification and journaling stay the one
code path for one server and for many. Behind them, each rollout is an *attempt* on one member
of the :class:`~osmosis_ai.eval._impl.fleet.pool.Fleet`; when that member fails (or loses the rollout)
the attempt is re-dispatched to another member under the same rollout id.

Why this keeps every row counted exactly once: the scheduler journals one record per work item,
after this handle's one final result; a re-dispatch happens *before* any result exists. Before
re-admitting, the rollout's proxy route is opened again with a fresh token and an empty call
list, so a stale attempt still running on a hung server can neither reach the model nor add
calls to the row's record.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import httpx

from osmosis_ai.eval._impl.fleet.pool import Fleet, FleetExhausted, Member

if TYPE_CHECKING:
    from osmosis_ai.eval._impl.proxy.calls import PolicyRoutes
    from osmosis_ai.rollout.types import RolloutResultResponse

#: Answers that mean "this server will not run our rollouts": fail it, go elsewhere.
_SERVER_REFUSED = frozenset({401, 403, 500, 502, 503, 504})
#: Poll answers that mean "this server lost the rollout" (restarted, lease gone).
_ROLLOUT_LOST = frozenset({404, 409, 410})


def _about_the_row(status: int | None) -> bool:
    """A ``4xx`` (other than a refused key) is about the request: the scheduler records the
    row; anything else from a server is about the server."""
    return isinstance(status, int) and 400 <= status < 500


def open_member(url: str, api_key: str | None, admission_timeout_sec: float) -> Member:
    """A member for ``url``; the caller closes its client (``member.client.aclose()``).

    The client makes its own HTTP client, so ``http://`` servers are driven through its lean
    transport (admission and long polls skip httpx's per-request machinery); its ``429``
    answers shrink the member's slots (:meth:`Member.on_busy`).
    """
    from osmosis_ai.rollout.client import RolloutClient

    client = RolloutClient(url=url, admission_timeout_sec=admission_timeout_sec, api_key=api_key)
    member = Member(url=url, client=client)
    client.on_busy = member.on_busy
    return member


class FleetHandle:
    """One rollout on the fleet, however many attempts it takes (what the scheduler awaits)."""

    def __init__(self, task: asyncio.Task[RolloutResultResponse]) -> None:
        self._task = task

    async def wait_for_completion(self) -> RolloutResultResponse:
        return await self._task

    def cancel(self) -> bool:
        return self._task.cancel()

    def done(self) -> bool:
        return self._task.done()


class _Lost(Exception):
    """This attempt's server lost the rollout or failed: re-dispatch it."""


class FleetClient:
    """Runs rollouts on the fleet; see the module docstring."""

    def __init__(
        self, fleet: Fleet, proxy: PolicyRoutes, *, max_attempts: int | None = None
    ) -> None:
        self.fleet = fleet
        self.proxy = proxy
        self.max_attempts = max_attempts or 2 * len(fleet.members) + 1
        self._where: dict[str, Member] = {}
        # Rollouts whose drive was cancelled mid-attempt (the row's deadline, or the run's end):
        # their slot is freed once the scheduler says which (rollout_timed_out, cancel_rollout).
        self._parked: dict[str, Member] = {}
        self._background: set[asyncio.Task[Any]] = set()

    async def run_rollout_async(self, **request: Any) -> FleetHandle:
        task = asyncio.create_task(
            self._drive(request), name=f"osmosis-fleet-{request['rollout_id']}"
        )
        return FleetHandle(task)

    def rollout_timed_out(self, rollout_id: str, deadline_sec: float) -> None:
        """The row's per-item deadline passed with its rollout on a server: a server that
        admits rollouts and never finishes them is failed (its other rows go elsewhere)
        unless it is the last one left."""
        member = self._parked.get(rollout_id)
        if member is None or not member.alive:
            return
        if any(m.alive and m is not member for m in self.fleet.members):
            self.fleet.fail(
                member,
                f"it admitted rollout {rollout_id} and had not finished it within the "
                f"per-item deadline of {deadline_sec:g}s",
            )

    async def cancel_rollout(self, rollout_id: str) -> Any:
        member = self._where.get(rollout_id)
        parked = self._parked.pop(rollout_id, None)
        if parked is not None:
            self.fleet.release(parked, finished=False)
            member = parked
        if member is None or not member.alive:
            return None
        return await member.client.cancel_rollout(rollout_id)

    async def _drive(self, request: dict[str, Any]) -> RolloutResultResponse:
        rollout_id: str = request["rollout_id"]
        problem = ""
        for attempt in range(self.max_attempts):
            if attempt:
                url, token = self.proxy.register(rollout_id)  # a fresh route: see the docstring
                request = {**request, "chat_completions_url": url, "llm_api_key": token}
            member = await self.fleet.acquire()
            self._where[rollout_id] = member
            finished = False
            try:
                result = await self._attempt(member, request)
                finished = True
                return result
            except _Lost as exc:
                problem = str(exc)
                member.redispatched += 1
            except asyncio.CancelledError:
                self._parked[rollout_id] = member  # released by cancel_rollout
                raise
            finally:
                self._where.pop(rollout_id, None)
                if rollout_id not in self._parked:
                    self.fleet.release(member, finished=finished)
        raise FleetExhausted(
            f"rollout {rollout_id} was dispatched {self.max_attempts} times and lost each time "
            f"(last: {problem})"
        )

    async def _attempt(self, member: Member, request: dict[str, Any]) -> RolloutResultResponse:
        """One attempt on ``member``; raises :class:`_Lost` when it must go elsewhere."""
        from osmosis_ai.rollout.client import RolloutProtocolError
        from osmosis_ai.rollout.client.handle import poll_result
        from osmosis_ai.rollout.types.enums import RolloutStatus
        from osmosis_ai.rollout.types.protocol import RolloutInitRequest

        admitted = False

        async def run() -> RolloutResultResponse:  # polls in this task: no handle needed
            nonlocal admitted
            client = member.client
            rollout_id = request["rollout_id"]
            admission, posted_at = await client._admit_request(
                rollout_id, RolloutInitRequest(**request)
            )
            admitted = True
            return await poll_result(client, admission, posted_at)

        task = asyncio.create_task(run())
        member.tasks.add(task)
        current = asyncio.current_task()
        try:
            result = await task
        except asyncio.CancelledError:
            if (current is not None and current.cancelling()) or member.alive:
                raise
            raise _Lost(f"{member.url} failed: {member.failure}") from None
        except (httpx.TransportError, OSError) as exc:
            await self.fleet.confirm_down(member, exc)
            self._abandon(member, request["rollout_id"], admitted)
            raise _Lost(f"{member.url}: {type(exc).__name__}: {exc}") from None
        except RolloutProtocolError as exc:
            status = exc.status_code
            if status in _SERVER_REFUSED or not _about_the_row(status):
                # It refuses our rollouts, or it answers what no rollout server would (a
                # result that is not one, a redirect...): one such server must not halt the
                # run; its rows go to the others.
                self.fleet.fail(member, str(exc))
            elif not (admitted and status in _ROLLOUT_LOST):
                raise  # about this row (e.g. 422): the scheduler records it
            self._abandon(member, request["rollout_id"], admitted)
            raise _Lost(f"{member.url}: {exc}") from None
        finally:
            member.tasks.discard(task)
        if result.status == RolloutStatus.CANCELLED:
            self.fleet.fail(member, "it cancelled a running rollout (the server is shutting down)")
            raise _Lost(f"{member.url} cancelled the rollout")
        return result

    def _abandon(self, member: Member, rollout_id: str, admitted: bool) -> None:
        """Best effort: stop an abandoned attempt on a server that still answers."""
        if not admitted or not member.alive:
            return

        async def cancel() -> None:
            with contextlib.suppress(Exception):
                await member.client.cancel_rollout(rollout_id)

        task = asyncio.create_task(cancel())
        self._background.add(task)
        task.add_done_callback(self._background.discard)
