"""``RolloutClient``: the controller side of the rollout protocol (0.3.8 polling).

Whoever drives a rollout server (a trainer, ``osmosis eval run``, a test) admits rollouts with
``POST /rollout`` and long-polls ``GET /rollout/{id}/result`` with the lease token it got back.
The client handles the parts that are easy to get wrong: backing off on 429 while honouring
``Retry-After``, one poller per rollout (serial polling starves leases), renewing the lease by
starting each poll well within the lease, and retrying transient failures only while the lease
is still alive. It needs only ``httpx``.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from typing import Any

import httpx
from pydantic import ValidationError

from osmosis_ai._util.backoff import parse_retry_after
from osmosis_ai.errors import RolloutAdmissionTimeoutError, RolloutProtocolError
from osmosis_ai.rollout.client._http import Reply, Sender, owned_client
from osmosis_ai.rollout.client.handle import RolloutHandle
from osmosis_ai.rollout.types.protocol import (
    CancelRolloutsResponse,
    RolloutInitRequest,
    RolloutInitResponse,
    RolloutLifecycle,
    RolloutResultResponse,
)

_RETRY_AFTER_MIN = 0.05
_RETRY_AFTER_MAX = 60.0
_RETRY_AFTER_DEFAULT = 1.0
_CANCEL_TIMEOUT_SEC = 5.0
_IDLE_TOLERATED = frozenset({408, 429, 500, 502, 503, 504})
# Fields of the 0.3.0 callback protocol: a poll-protocol client never sends them.
_CALLBACK_FIELDS = frozenset(
    {"controller_api_key", "completion_callback_url", "grader_callback_url"}
)


class RolloutClient:
    """Drives one rollout server.

    Args:
        url: the server's base URL (a trailing ``/`` is ignored).
        http_client: an ``httpx.AsyncClient`` to use; the client closes only one it created.
            Each rollout in flight holds one connection for its long poll, so a supplied
            client's pool must allow as many connections as rollouts in flight. A client made
            here polls ``http://`` servers through a lean HTTP/1.1 transport whose cost per poll
            does not grow with the polls open; httpx's default transport (an injected client,
            or ``https://``) costs more per request the more connections are in use.
        admission_timeout_sec: how long admission may take, 429 retries included; ``None``
            waits forever.
        api_key: sent as ``Authorization: Bearer <api_key>`` on every request.
        on_busy: called on every ``429`` answer to ``POST /rollout`` (before the client backs
            off and retries), for callers that spread rollouts by each server's free capacity.

    Attributes (0.3.8): ``url``, ``admission_timeout_sec``, ``http_client`` (the
    ``httpx.AsyncClient`` in use) and ``owns_http_client`` (``True`` when this client created
    it, and so closes it in :meth:`aclose`). Redirects are never followed, whatever
    ``http_client``'s own setting: a redirect is answered with :class:`RolloutProtocolError`.
    """

    def __init__(
        self,
        *,
        url: str,
        http_client: httpx.AsyncClient | None = None,
        admission_timeout_sec: float | None = None,
        api_key: str | None = None,
        on_busy: Callable[[], None] | None = None,
    ) -> None:
        if admission_timeout_sec is not None and not math.isfinite(admission_timeout_sec):
            raise ValueError("admission_timeout_sec must be finite; omit it to wait unbounded")
        if api_key is not None and not api_key.strip():
            raise ValueError("api_key must be non-empty when provided")
        self.url = url.rstrip("/")
        self.admission_timeout_sec = admission_timeout_sec
        self.on_busy = on_busy
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.owns_http_client = http_client is None
        if http_client is None:
            http_client, plain = owned_client()
            self._sender = Sender(self.url, http_client, plain)
        else:
            self._sender = Sender(self.url, None, None)
        self.http_client: httpx.AsyncClient = http_client

    def __repr__(self) -> str:
        return f"RolloutClient(url={self.url!r})"

    async def __aenter__(self) -> RolloutClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self.owns_http_client:
            await self.http_client.aclose()

    # ---- rollouts -------------------------------------------------------------------------

    async def run_rollout(
        self,
        initial_messages: list[dict[str, Any]],
        chat_completions_url: str,
        rollout_id: str,
        llm_api_key: str | None = None,
        label: str | None = None,
        metadata: dict[str, Any] | None = None,
        grade: bool = True,
        agent_timeout_sec: float | None = None,
        grader_timeout_sec: float | None = None,
        extra_fields: dict[str, Any] | None = None,
    ) -> RolloutResultResponse:
        """Admit one rollout and wait for its final result."""
        handle = await self.run_rollout_async(
            initial_messages,
            chat_completions_url,
            rollout_id,
            llm_api_key=llm_api_key,
            label=label,
            metadata=metadata,
            grade=grade,
            agent_timeout_sec=agent_timeout_sec,
            grader_timeout_sec=grader_timeout_sec,
            extra_fields=extra_fields,
        )
        return await handle

    async def run_rollout_async(
        self,
        initial_messages: list[dict[str, Any]],
        chat_completions_url: str,
        rollout_id: str,
        llm_api_key: str | None = None,
        label: str | None = None,
        metadata: dict[str, Any] | None = None,
        grade: bool = True,
        agent_timeout_sec: float | None = None,
        grader_timeout_sec: float | None = None,
        extra_fields: dict[str, Any] | None = None,
    ) -> RolloutHandle:
        """Admit one rollout (retrying 429) and return a handle that polls for its result."""
        request = RolloutInitRequest(
            initial_messages=initial_messages,
            chat_completions_url=chat_completions_url,
            rollout_id=rollout_id,
            llm_api_key=llm_api_key,
            label=label,
            metadata=metadata,
            grade=grade,
            agent_timeout_sec=agent_timeout_sec,
            grader_timeout_sec=grader_timeout_sec,
            extra_fields=extra_fields,
        )
        admission, posted_at = await self._admit_request(rollout_id, request)
        return RolloutHandle(self, admission, posted_at)

    async def _admit_request(
        self, rollout_id: str, request: RolloutInitRequest
    ) -> tuple[RolloutInitResponse, float]:
        """Admit ``request`` (retrying 429): the server's answer and when the admitting request
        was sent (``loop.time()``), for :func:`~osmosis_ai.rollout.client.handle.poll_result`.

        :meth:`run_rollout_async` is this and a handle whose task polls; a caller that already
        runs each rollout in a task of its own and needs no status events polls in that task
        instead (one task and one event-loop pass fewer per rollout).
        """
        body = request.model_dump_json(exclude=set(_CALLBACK_FIELDS)).encode()
        return await self._admit(rollout_id, body)

    async def _admit(self, rollout_id: str, body: bytes) -> tuple[RolloutInitResponse, float]:
        """POST until 202 (sleeping ``Retry-After`` on 429) within ``admission_timeout_sec``.

        Only the expiry of that deadline is an admission timeout (chained to its
        ``TimeoutError``); a transport timeout of one request propagates as it is.
        """
        loop = asyncio.get_running_loop()
        limit = self.admission_timeout_sec
        deadline = asyncio.timeout(limit)
        in_flight = False
        try:
            async with deadline:
                while True:
                    in_flight, posted_at = True, loop.time()
                    reply = await self._sender.send(
                        self.http_client, "POST", "/rollout", headers=self._headers, body=body
                    )
                    in_flight = False
                    if reply.status_code == 202:
                        return _parse_admission(rollout_id, reply), posted_at
                    if reply.status_code != 429:
                        raise RolloutProtocolError(
                            f"POST /rollout returned {reply.status_code}; only 202 and 429 are "
                            f"accepted{reply.detail()}",
                            status_code=reply.status_code,
                        )
                    if self.on_busy is not None:
                        self.on_busy()
                    await asyncio.sleep(_retry_after(reply))
        except TimeoutError as exc:
            if not deadline.expired():
                raise
            why = (
                "; admission may have succeeded (a request was in flight): cancel the rollout "
                "to be sure, or let its polling lease expire"
                if in_flight
                else " (the server kept answering 429: its queue is full)"
            )
            raise RolloutAdmissionTimeoutError(
                f"admission for rollout {rollout_id} timed out after {limit:g} seconds{why}"
            ) from exc

    async def cancel_rollout(self, rollout_id: str) -> CancelRolloutsResponse:
        """Cancel one rollout on the server (bounded to 5 s)."""
        body = json.dumps({"ids": [rollout_id], "prefix": None, "all": False}).encode()
        async with asyncio.timeout(_CANCEL_TIMEOUT_SEC):
            reply = await self._sender.send(
                self.http_client,
                "POST",
                "/rollout/cancel",
                headers=self._headers,
                body=body,
                request_timeout_sec=_CANCEL_TIMEOUT_SEC,
            )
        if reply.status_code != 200:
            raise RolloutProtocolError(
                f"POST /rollout/cancel returned {reply.status_code}{reply.detail()}",
                status_code=reply.status_code,
            )
        try:
            return CancelRolloutsResponse.model_validate_json(reply.content)
        except ValidationError:
            raise RolloutProtocolError(
                "POST /rollout/cancel returned an invalid body", status_code=200
            ) from None

    # ---- server state ---------------------------------------------------------------------

    async def health(self) -> dict[str, Any]:
        """``GET /health`` as a dict (one request: a redirect is an error, never followed)."""
        reply = await self._sender.send(self.http_client, "GET", "/health", headers=self._headers)
        if reply.status_code != 200:
            hint = (
                " (redirects are not followed: point url at the rollout server itself)"
                if 300 <= reply.status_code < 400
                else reply.detail()
            )
            raise RolloutProtocolError(
                f"GET /health returned {reply.status_code}{hint}", status_code=reply.status_code
            )
        try:
            payload = json.loads(reply.content)
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            raise RolloutProtocolError("GET /health did not return a JSON object", status_code=200)
        return payload

    async def wait_idle(
        self,
        *,
        timeout_sec: float = 120.0,
        poll_interval_sec: float = 1.0,
        process_id: str | None = None,
    ) -> dict[str, Any]:
        """Poll ``/health`` until the same server process reports no active rollouts.

        Returns that whole ``/health`` body (its ``lifecycle`` says ``active_rollouts: 0``).
        Busy answers (408, 429, 5xx) and transport errors are retried. A server restart while
        waiting (``process_id`` changed) is an error: its in-flight rollouts are gone, not
        finished. Raises ``TimeoutError`` after ``timeout_sec``.
        """
        for value in (timeout_sec, poll_interval_sec):
            if not math.isfinite(value) or value <= 0:
                raise ValueError("wait timeouts must be positive and finite")
        last_problem = "no answer yet"
        try:
            async with asyncio.timeout(timeout_sec):
                while True:
                    try:
                        health = await self.health()
                    except RolloutProtocolError as exc:
                        if exc.status_code not in _IDLE_TOLERATED:
                            raise
                        last_problem = str(exc)
                    except httpx.TransportError as exc:
                        last_problem = f"{type(exc).__name__}: {exc}"
                    else:
                        process_id = _same_process(health, process_id)
                        active = _active_rollouts(health)
                        if active == 0:
                            return health
                        last_problem = f"{active} rollout(s) still active"
                    await asyncio.sleep(poll_interval_sec)
        except TimeoutError as exc:
            raise TimeoutError(
                f"server at {self.url} did not become idle within {timeout_sec:g}s ({last_problem})"
            ) from exc


def _same_process(health: dict[str, Any], expected: str | None) -> str:
    current = health.get("process_id")
    if not isinstance(current, str) or not current:
        raise RolloutProtocolError("Server has no lifecycle identity", status_code=200)
    if expected is not None and current != expected:
        raise RolloutProtocolError("Server restarted while waiting", status_code=200)
    return current


def _active_rollouts(health: dict[str, Any]) -> int:
    try:
        return RolloutLifecycle.model_validate(health.get("lifecycle")).active_rollouts
    except ValidationError:
        raise RolloutProtocolError("Server has no valid lifecycle state", status_code=200) from None


def _parse_admission(rollout_id: str, reply: Reply) -> RolloutInitResponse:
    try:
        admission = RolloutInitResponse.model_validate_json(reply.content)
    except ValidationError as exc:
        raise RolloutProtocolError(
            f"POST /rollout returned 202 with an invalid body: {exc.errors()[0]['msg']}",
            status_code=202,
        ) from None
    if admission.rollout_id != rollout_id:
        raise RolloutProtocolError(
            f"POST /rollout admitted rollout {admission.rollout_id!r}, expected {rollout_id!r}",
            status_code=202,
        )
    return admission


def _retry_after(reply: Reply) -> float:
    value = parse_retry_after(reply.retry_after)
    if value is None:
        return _RETRY_AFTER_DEFAULT
    return min(max(value, _RETRY_AFTER_MIN), _RETRY_AFTER_MAX)
