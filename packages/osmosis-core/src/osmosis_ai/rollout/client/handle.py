"""``RolloutHandle``: one admitted rollout, polled for its result in a background task."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx
from pydantic import ValidationError

from osmosis_ai._util.backoff import Backoff
from osmosis_ai.errors import RolloutProtocolError
from osmosis_ai.rollout.types.enums import RolloutStatus
from osmosis_ai.rollout.types.protocol import (
    POLLING_LEASE_HEADER,
    RolloutInitResponse,
    RolloutResultResponse,
)

if TYPE_CHECKING:
    from osmosis_ai.rollout.client.client import RolloutClient

_POLL_SLACK_SEC = 10.0
# A poll that could not reach the server (a restart, a dropped connection) is tried again for
# as long as the next attempt can still end inside the lease: a restarted server answers from
# its outbox, so giving up after a few quick tries lost results the server still had.
_TRANSPORT_BACKOFF = Backoff(0.1, cap=2.0)
_GATEWAY_DELAYS = tuple(Backoff(0.25, jitter="none").full(n) for n in range(1, 7))  # 0.25 .. 8
_GATEWAY_STATUS = frozenset({502, 503, 504})
_TRANSIENT = (httpx.RemoteProtocolError, httpx.NetworkError, httpx.ReadTimeout)
_STAGE = {
    RolloutStatus.QUEUED: 0,
    RolloutStatus.RUNNING: 1,
    RolloutStatus.GRADING: 2,
    RolloutStatus.SUCCESS: 3,
    RolloutStatus.FAILURE: 3,
    RolloutStatus.CANCELLED: 3,
}


class RolloutHandle:
    """One admitted rollout. Await it (or :meth:`wait_for_completion`) for the final result.

    Polling runs in a background task (``result_task``) started at admission. Attributes, as in
    osmosis-ai 0.3.8: ``rollout_id``; ``status`` and ``latest_result`` (updated by every poll);
    ``status_changed``, an ``asyncio.Condition`` notified after every poll and when polling
    ends; ``polling_finished``, ``True`` once the polling task has ended for any reason (a
    final result, an error, or :meth:`cancel`). :meth:`cancel` stops only that local task; use
    :meth:`RolloutClient.cancel_rollout` to cancel the rollout on the server.
    """

    def __init__(
        self, client: RolloutClient, admission: RolloutInitResponse, posted_at: float
    ) -> None:
        self.rollout_id = admission.rollout_id
        self.status: RolloutStatus = admission.status
        self.latest_result: RolloutResultResponse | None = None
        self.admission = admission
        self.status_changed = asyncio.Condition()
        self.polling_finished = False
        self.result_task: asyncio.Task[RolloutResultResponse] = asyncio.create_task(
            self._run(client, posted_at), name=f"osmosis-poll-{self.rollout_id}"
        )
        self.result_task.add_done_callback(self._ended)
        self._late_notice: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"RolloutHandle(rollout_id={self.rollout_id!r}, status={self.status.value!r})"

    def __await__(self) -> Generator[Any, None, RolloutResultResponse]:
        return self.result_task.__await__()

    async def wait_for_completion(self) -> RolloutResultResponse:
        return await self.result_task

    async def wait_for_running(self) -> RolloutStatus:
        """Wait until the rollout is running or further along; return its status."""
        return await self._wait_for_stage(1)

    async def wait_for_grading(self) -> RolloutStatus:
        """Wait until the rollout is grading or finished; return its status."""
        return await self._wait_for_stage(2)

    def done(self) -> bool:
        return self.result_task.done()

    def cancel(self) -> bool:
        """Stop polling locally (the server keeps running the rollout)."""
        return self.result_task.cancel()

    async def _wait_for_stage(self, stage: int) -> RolloutStatus:
        def reached() -> bool:
            return _STAGE.get(self.status, 0) >= stage

        async with self.status_changed:
            await self.status_changed.wait_for(lambda: reached() or self.polling_finished)
            current = self.status
        if reached():
            return current
        return (await self.result_task).status  # re-raises the polling error

    async def _record(self, result: RolloutResultResponse) -> None:
        async with self.status_changed:
            self.status = result.status
            self.latest_result = result
            self.status_changed.notify_all()

    async def _run(self, client: RolloutClient, posted_at: float) -> RolloutResultResponse:
        try:
            return await poll_result(client, self.admission, posted_at, self._record)
        finally:
            await self._finish()

    async def _finish(self) -> None:
        async with self.status_changed:
            self.polling_finished = True
            self.status_changed.notify_all()

    def _ended(self, task: asyncio.Task[RolloutResultResponse]) -> None:
        # A task cancelled before its first step never runs ``_run``'s ``finally``.
        if not self.polling_finished:
            self.polling_finished = True
            self._late_notice = task.get_loop().create_task(self._finish())


async def poll_result(
    client: RolloutClient,
    admission: RolloutInitResponse,
    posted_at: float,
    on_poll: Callable[[RolloutResultResponse], Awaitable[None]] | None = None,
) -> RolloutResultResponse:
    """Long-poll until a terminal result, retrying transient failures while the lease lives;
    ``on_poll`` gets every answer (the handle's status events).

    The lease is renewed when a poll *arrives*, so the deadline after a successful poll is that
    poll's start plus the lease; a retry is attempted only if it can still start in time.
    """
    loop = asyncio.get_running_loop()
    rollout_id = admission.rollout_id
    path = f"/rollout/{quote(rollout_id, safe='')}/result"
    what = f"GET /rollout/{rollout_id}/result"
    headers = {**client._headers, POLLING_LEASE_HEADER: admission.polling_lease_token}
    lease = admission.polling_lease_timeout_sec
    request_timeout = admission.result_wait_timeout_sec + _POLL_SLACK_SEC
    lease_deadline = posted_at + lease
    transport_failures = gateway_failures = 0
    while True:
        started = loop.time()
        try:
            reply = await client._sender.send(
                client.http_client,
                "GET",
                path,
                headers=headers,
                request_timeout_sec=request_timeout,
            )
        except _TRANSIENT:
            transport_failures += 1
            delay = _TRANSPORT_BACKOFF.delay(transport_failures)
            if loop.time() + delay + request_timeout >= lease_deadline:
                raise
            await asyncio.sleep(delay)
            continue
        status_code = reply.status_code
        if status_code in _GATEWAY_STATUS:
            delay = _GATEWAY_DELAYS[min(gateway_failures, len(_GATEWAY_DELAYS) - 1)]
            gateway_failures += 1
            if (
                gateway_failures > len(_GATEWAY_DELAYS)
                or loop.time() + delay + request_timeout >= lease_deadline
            ):
                raise RolloutProtocolError(
                    f"{what} returned {status_code}{reply.detail()}", status_code=status_code
                )
            await asyncio.sleep(delay)
            continue
        if status_code != 200:
            raise RolloutProtocolError(
                f"{what} returned {status_code}{reply.detail()}", status_code=status_code
            )
        lease_deadline = started + lease
        transport_failures = gateway_failures = 0
        result = _parse_result(reply.content, rollout_id, what)
        if on_poll is not None:
            await on_poll(result)
        if result.status.is_terminal:
            return result


def _parse_result(content: bytes, rollout_id: str, what: str) -> RolloutResultResponse:
    try:
        result = RolloutResultResponse.model_validate_json(content)
    except ValidationError as exc:
        raise RolloutProtocolError(
            f"{what} returned an invalid body: {exc.errors()[0]['msg']}", status_code=200
        ) from None
    if result.rollout_id != rollout_id:
        raise RolloutProtocolError(
            f"{what} returned the result of rollout {result.rollout_id!r}; a server must answer "
            "for the rollout asked about",
            status_code=200,
        )
    return result
