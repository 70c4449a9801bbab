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
import math
from collections.abc import Generator
from typing import Any

import httpx
from pydantic import ValidationError

from osmosis_ai.rollout.client.errors import RolloutAdmissionTimeoutError, RolloutProtocolError
from osmosis_ai.rollout.types.enums import RolloutStatus
from osmosis_ai.rollout.types.protocol import (
    POLLING_LEASE_HEADER,
    CancelRolloutsResponse,
    RolloutInitRequest,
    RolloutInitResponse,
    RolloutResultResponse,
)

_RETRY_AFTER_MIN = 0.05
_RETRY_AFTER_MAX = 60.0
_RETRY_AFTER_DEFAULT = 1.0
_POLL_SLACK_SEC = 10.0
_TRANSPORT_DELAYS = (0.1, 0.5)
_GATEWAY_DELAYS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
_GATEWAY_STATUS = frozenset({502, 503, 504})
_CANCEL_TIMEOUT_SEC = 5.0
_ADMISSION_REQUEST_TIMEOUT_SEC = 60.0
# Fields of the 0.3.0 callback protocol: a poll-protocol client never sends them.
_CALLBACK_FIELDS = frozenset(
    {"controller_api_key", "completion_callback_url", "grader_callback_url"}
)
_STAGE = {
    RolloutStatus.QUEUED: 0,
    RolloutStatus.RUNNING: 1,
    RolloutStatus.GRADING: 2,
    RolloutStatus.SUCCESS: 3,
    RolloutStatus.FAILURE: 3,
    RolloutStatus.CANCELLED: 3,
}


class RolloutClient:
    """Drives one rollout server.

    Args:
        url: the server's base URL (a trailing ``/`` is ignored).
        http_client: an ``httpx.AsyncClient`` to use; the client closes only one it created.
            Each rollout in flight holds one connection for its long poll, so a supplied
            client's pool must allow as many connections as rollouts in flight (the default
            client has no cap).
        admission_timeout_sec: how long to keep retrying 429 answers; ``None`` waits forever.
        api_key: sent as ``Authorization: Bearer <api_key>`` on every request.
    """

    def __init__(
        self,
        *,
        url: str,
        http_client: httpx.AsyncClient | None = None,
        admission_timeout_sec: float | None = None,
        api_key: str | None = None,
    ) -> None:
        if admission_timeout_sec is not None and not math.isfinite(admission_timeout_sec):
            raise ValueError("admission_timeout_sec must be finite; omit it to wait unbounded")
        if api_key is not None and not api_key.strip():
            raise ValueError("api_key must be non-empty when provided")
        self.url = url.rstrip("/")
        self.admission_timeout_sec = admission_timeout_sec
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._owns_client = http_client is None
        self._http = http_client or httpx.AsyncClient(
            timeout=httpx.Timeout(_ADMISSION_REQUEST_TIMEOUT_SEC),
            follow_redirects=False,
            # One long poll per rollout in flight: the pool must not cap them.
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=256),
        )

    def __repr__(self) -> str:
        return f"RolloutClient(url={self.url!r})"

    async def __aenter__(self) -> RolloutClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_client:
            await self._http.aclose()

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
        body = request.model_dump(mode="json", exclude=set(_CALLBACK_FIELDS))
        admission, posted_at = await self._admit(rollout_id, body)
        return RolloutHandle(self, admission, posted_at)

    async def _admit(
        self, rollout_id: str, body: dict[str, Any]
    ) -> tuple[RolloutInitResponse, float]:
        loop = asyncio.get_running_loop()
        limit = self.admission_timeout_sec
        deadline = None if limit is None else loop.time() + limit
        url = f"{self.url}/rollout"
        while True:
            posted_at = loop.time()
            remaining = None if deadline is None else max(deadline - posted_at, 0.0)
            try:
                async with asyncio.timeout(remaining):
                    response = await self._http.post(url, json=body, headers=self._headers)
            except TimeoutError:
                raise RolloutAdmissionTimeoutError(
                    f"admission for rollout {rollout_id} timed out after {limit:g} seconds; "
                    "admission may have succeeded (a request was in flight): cancel the "
                    "rollout to be sure"
                ) from None
            if response.status_code == 202:
                return self._parse_admission(rollout_id, response), posted_at
            if response.status_code != 429:
                raise RolloutProtocolError(
                    f"POST /rollout returned {response.status_code}; only 202 and 429 are "
                    f"accepted{_detail(response)}",
                    status_code=response.status_code,
                )
            delay = _retry_after(response)
            if deadline is not None and loop.time() + delay >= deadline:
                raise RolloutAdmissionTimeoutError(
                    f"admission for rollout {rollout_id} timed out after {limit:g} seconds "
                    "(the server kept answering 429: its queue is full)"
                )
            await asyncio.sleep(delay)

    @staticmethod
    def _parse_admission(rollout_id: str, response: httpx.Response) -> RolloutInitResponse:
        try:
            admission = RolloutInitResponse.model_validate_json(response.content)
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

    async def _poll(
        self, handle: RolloutHandle, admission: RolloutInitResponse, posted_at: float
    ) -> RolloutResultResponse:
        loop = asyncio.get_running_loop()
        rollout_id = admission.rollout_id
        url = f"{self.url}/rollout/{rollout_id}/result"
        headers = {**self._headers, POLLING_LEASE_HEADER: admission.polling_lease_token}
        lease = admission.polling_lease_timeout_sec
        request_timeout = admission.result_wait_timeout_sec + _POLL_SLACK_SEC
        lease_deadline = posted_at + lease
        transport_failures = 0
        gateway_failures = 0
        while True:
            started = loop.time()
            try:
                response = await self._http.get(url, headers=headers, timeout=request_timeout)
            except (httpx.RemoteProtocolError, httpx.NetworkError, httpx.ReadTimeout):
                if transport_failures >= len(_TRANSPORT_DELAYS):
                    raise
                delay = _TRANSPORT_DELAYS[transport_failures]
                transport_failures += 1
                if loop.time() + delay + request_timeout >= lease_deadline:
                    raise
                await asyncio.sleep(delay)
                continue
            status_code = response.status_code
            if status_code in _GATEWAY_STATUS:
                delay = _GATEWAY_DELAYS[min(gateway_failures, len(_GATEWAY_DELAYS) - 1)]
                gateway_failures += 1
                if (
                    gateway_failures > len(_GATEWAY_DELAYS)
                    or loop.time() + delay + request_timeout >= lease_deadline
                ):
                    raise RolloutProtocolError(
                        f"GET /rollout/{rollout_id}/result returned {status_code}{_detail(response)}",
                        status_code=status_code,
                    )
                await asyncio.sleep(delay)
                continue
            if status_code != 200:
                raise RolloutProtocolError(
                    f"GET /rollout/{rollout_id}/result returned {status_code}{_detail(response)}",
                    status_code=status_code,
                )
            lease_deadline = started + lease
            transport_failures = gateway_failures = 0
            try:
                result = RolloutResultResponse.model_validate_json(response.content)
            except ValidationError as exc:
                raise RolloutProtocolError(
                    f"GET /rollout/{rollout_id}/result returned an invalid body: "
                    f"{exc.errors()[0]['msg']}",
                    status_code=200,
                ) from None
            handle._update(result)
            if result.status.is_terminal:
                return result

    async def cancel_rollout(self, rollout_id: str) -> CancelRolloutsResponse:
        """Cancel one rollout on the server (bounded to 5 s)."""
        body = {"ids": [rollout_id], "prefix": None, "all": False}
        async with asyncio.timeout(_CANCEL_TIMEOUT_SEC):
            response = await self._http.post(
                f"{self.url}/rollout/cancel", json=body, headers=self._headers
            )
        if response.status_code != 200:
            raise RolloutProtocolError(
                f"POST /rollout/cancel returned {response.status_code}{_detail(response)}",
                status_code=response.status_code,
            )
        try:
            return CancelRolloutsResponse.model_validate_json(response.content)
        except ValidationError:
            raise RolloutProtocolError(
                "POST /rollout/cancel returned an invalid body", status_code=200
            ) from None

    # ---- server state ---------------------------------------------------------------------

    async def health(self) -> dict[str, Any]:
        """``GET /health`` as a dict."""
        response = await self._http.get(f"{self.url}/health", headers=self._headers)
        if response.status_code != 200:
            raise RolloutProtocolError(
                f"GET /health returned {response.status_code}{_detail(response)}",
                status_code=response.status_code,
            )
        try:
            payload = response.json()
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

        Returns the ``lifecycle`` object. A server restart while waiting is an error (its
        in-flight rollouts are gone, not finished).
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_sec
        last_problem = "no answer yet"
        while True:
            payload: dict[str, Any] | None = None
            try:
                payload = await self.health()
            except RolloutProtocolError as exc:
                if not (exc.status_code in (408, 429) or exc.status_code >= 500):
                    raise
                last_problem = str(exc)
            except httpx.TransportError as exc:
                last_problem = f"{type(exc).__name__}: {exc}"
            if payload is not None:
                current = payload.get("process_id")
                if not isinstance(current, str) or not current:
                    raise RolloutProtocolError("Server has no lifecycle identity", status_code=200)
                if process_id is None:
                    process_id = current
                elif current != process_id:
                    raise RolloutProtocolError("Server restarted while waiting", status_code=200)
                lifecycle = payload.get("lifecycle")
                active = lifecycle.get("active_rollouts") if isinstance(lifecycle, dict) else None
                if not isinstance(active, int) or isinstance(active, bool) or active < 0:
                    raise RolloutProtocolError(
                        "Server has no valid lifecycle state", status_code=200
                    )
                if active == 0:
                    assert isinstance(lifecycle, dict)
                    return lifecycle
                last_problem = f"{active} rollout(s) still active"
            if loop.time() + poll_interval_sec > deadline:
                raise TimeoutError(
                    f"server at {self.url} did not become idle within {timeout_sec:g}s "
                    f"({last_problem})"
                )
            await asyncio.sleep(poll_interval_sec)


class RolloutHandle:
    """One admitted rollout. Await it (or :meth:`wait_for_completion`) for the final result.

    Polling runs in a background task started at admission. :meth:`cancel` stops only that
    local task; use :meth:`RolloutClient.cancel_rollout` to cancel the rollout on the server.
    """

    def __init__(
        self, client: RolloutClient, admission: RolloutInitResponse, posted_at: float
    ) -> None:
        self.rollout_id = admission.rollout_id
        self.status: RolloutStatus = admission.status
        self.latest_result: RolloutResultResponse | None = None
        self.admission = admission
        self._changed = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(
            client._poll(self, admission, posted_at), name=f"osmosis-poll-{self.rollout_id}"
        )
        self._task.add_done_callback(lambda _t: self._changed.set())

    def __repr__(self) -> str:
        return f"RolloutHandle(rollout_id={self.rollout_id!r}, status={self.status.value!r})"

    def __await__(self) -> Generator[Any, None, RolloutResultResponse]:
        return self._task.__await__()

    def _update(self, result: RolloutResultResponse) -> None:
        self.latest_result = result
        if result.status != self.status:
            self.status = result.status
            event, self._changed = self._changed, asyncio.Event()
            event.set()

    async def wait_for_completion(self) -> RolloutResultResponse:
        return await self._task

    async def wait_for_running(self) -> RolloutStatus:
        """Wait until the rollout is running or further along; return its status."""
        return await self._wait_for_stage(1)

    async def wait_for_grading(self) -> RolloutStatus:
        """Wait until the rollout is grading or finished; return its status."""
        return await self._wait_for_stage(2)

    async def _wait_for_stage(self, stage: int) -> RolloutStatus:
        while _STAGE.get(self.status, 0) < stage:
            if self._task.done():
                await self._task  # re-raises the polling error
                break
            await self._changed.wait()
        return self.status

    def done(self) -> bool:
        return self._task.done()

    def cancel(self) -> bool:
        """Stop polling locally (the server keeps running the rollout)."""
        return self._task.cancel()


def _retry_after(response: httpx.Response) -> float:
    try:
        value = float(response.headers.get("retry-after", ""))
    except ValueError:
        return _RETRY_AFTER_DEFAULT
    if not math.isfinite(value):
        return _RETRY_AFTER_DEFAULT
    return min(max(value, _RETRY_AFTER_MIN), _RETRY_AFTER_MAX)


def _detail(response: httpx.Response) -> str:
    try:
        payload = response.json()
    except ValueError:
        return ""
    detail = payload.get("detail") if isinstance(payload, dict) else None
    return f": {detail}" if isinstance(detail, str) else ""
