"""``RolloutClient`` against the real server (and a misbehaving stand-in where needed)."""

from __future__ import annotations

import asyncio
import inspect
import math
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from osmosis_ai.rollout.client import (
    RolloutAdmissionTimeoutError,
    RolloutClient,
    RolloutProtocolError,
)
from osmosis_ai.rollout.types import RolloutStatus

from ..server.rollout_server_harness import FakeBackend, running, serve_app  # type: ignore[import-not-found]

PROMPT = [{"role": "user", "content": "What is 6 * 7?"}]
CHAT = "http://127.0.0.1:9/v1/rollouts/r1"


def _client_for(http: Any, **options: Any) -> RolloutClient:
    return RolloutClient(url=str(http.base_url), **options)


async def test_run_rollout_to_completion_and_wait_idle() -> None:
    backend = FakeBackend()
    async with (
        running(backend, result_wait_timeout_sec=1.0, polling_lease_timeout_sec=5.0) as (
            http,
            _,
        ),
        _client_for(http) as client,
    ):
        handle = await client.run_rollout_async(
            PROMPT, CHAT, "r1", label="42", metadata={"mode": "staged"}
        )
        assert handle.rollout_id == "r1"
        await backend.started_event("r1").wait()
        assert await handle.wait_for_running() in (RolloutStatus.RUNNING, RolloutStatus.GRADING)
        backend.gate("r1").set()
        assert await handle.wait_for_grading() == RolloutStatus.GRADING
        backend.gate("r1:grading").set()
        result = await handle
        assert handle.done()
        assert handle.status == RolloutStatus.SUCCESS
        assert handle.latest_result == result
        assert result.sample is not None
        assert result.sample.reward == 1.0
        # Absent on the wire, so the model default copies messages.
        assert result.sample.trajectory_messages == result.sample.messages
        again = await client.run_rollout(PROMPT, CHAT, "r2", label="42", grade=False)
        assert again.status == RolloutStatus.SUCCESS
        assert again.sample is not None
        assert again.sample.reward is None
        # 0.3.8: the whole /health body, once its lifecycle says idle.
        idle = await client.wait_idle(poll_interval_sec=0.05)
        assert idle["lifecycle"] == {"accepting_rollouts": True, "active_rollouts": 0}
        health = await client.health()
        assert health["status"] == "ok"
        assert idle["process_id"] == health["process_id"]
        assert set(idle) == set(health)
        with pytest.raises(RolloutProtocolError) as duplicate:
            await client.run_rollout(PROMPT, CHAT, "r1")
        assert duplicate.value.status_code == 409
        with pytest.raises(RolloutProtocolError, match="Server restarted while waiting"):
            await client.wait_idle(process_id="another-process", poll_interval_sec=0.05)


async def test_429_is_retried_until_capacity_or_admission_timeout() -> None:
    class FillsUp(FakeBackend):
        refusals = 2

        def has_capacity(self) -> bool:
            if self.refusals:
                self.refusals -= 1
                return False
            return True

    backend = FillsUp()
    # The real server says Retry-After: 5, longer than the admission timeout; a real retry
    # is then exercised against a stand-in with a short Retry-After.
    async with (
        running(backend) as (http, _),
        _client_for(http, admission_timeout_sec=0.2) as client,
    ):
        with pytest.raises(RolloutAdmissionTimeoutError, match=r"timed out after 0\.2 seconds"):
            await client.run_rollout_async(PROMPT, CHAT, "r1")

    attempts: list[int] = []

    async def admit(request: Request) -> Response:
        attempts.append(1)
        if len(attempts) < 3:
            return JSONResponse(
                {"detail": "full"}, status_code=429, headers={"Retry-After": "0.01"}
            )
        payload = await request.json()
        return JSONResponse(
            {
                "rollout_id": payload["rollout_id"],
                "status": "queued",
                "polling_lease_token": "t" * 43,
                "result_wait_timeout_sec": 1.0,
                "polling_lease_timeout_sec": 5.0,
            },
            status_code=202,
        )

    async def result(request: Request) -> Response:
        return JSONResponse({"rollout_id": request.path_params["rid"], "status": "success"})

    app = Starlette(
        routes=[
            Route("/rollout", admit, methods=["POST"]),
            Route("/rollout/{rid}/result", result, methods=["GET"]),
        ]
    )
    busy: list[int] = []
    async with (
        serve_app(app) as url,
        RolloutClient(url=url, admission_timeout_sec=3, on_busy=lambda: busy.append(1)) as client,
    ):
        final = await client.run_rollout(PROMPT, CHAT, "r9")
    assert len(attempts) == 3
    assert len(busy) == 2  # told of each 429, not of the 202
    assert final.status == RolloutStatus.SUCCESS


async def test_poll_retries_gateway_errors_within_the_lease_and_rejects_403() -> None:
    polls: list[str] = []

    async def admit(request: Request) -> Response:
        payload = await request.json()
        rid = payload["rollout_id"]
        return JSONResponse(
            {
                "rollout_id": "someone-else" if rid == "mismatch" else rid,
                "status": "queued",
                "polling_lease_token": "tok",
                "result_wait_timeout_sec": 1.0,
                "polling_lease_timeout_sec": 30.0,
            },
            status_code=202,
        )

    async def result(request: Request) -> Response:
        rid = request.path_params["rid"]
        polls.append(request.headers["x-osmosis-rollout-lease"])
        if rid == "forbidden":
            return JSONResponse({"detail": "invalid polling lease"}, status_code=403)
        if len(polls) <= 2:
            return JSONResponse({"detail": "busy"}, status_code=503)
        return JSONResponse({"rollout_id": rid, "status": "failure", "err_category": "timeout"})

    app = Starlette(
        routes=[
            Route("/rollout", admit, methods=["POST"]),
            Route("/rollout/{rid}/result", result, methods=["GET"]),
        ]
    )
    async with serve_app(app) as url, RolloutClient(url=url + "/") as client:
        final = await client.run_rollout(PROMPT, CHAT, "r1")
        assert final.status == RolloutStatus.FAILURE
        assert polls == ["tok", "tok", "tok"]
        with pytest.raises(RolloutProtocolError) as forbidden:
            await client.run_rollout(PROMPT, CHAT, "forbidden")
        assert forbidden.value.status_code == 403
        with pytest.raises(RolloutProtocolError, match="expected 'mismatch'"):
            await client.run_rollout_async(PROMPT, CHAT, "mismatch")


async def test_cancel_rollout_and_local_handle_cancel() -> None:
    backend = FakeBackend()
    async with running(backend) as (http, _), _client_for(http) as client:
        handle = await client.run_rollout_async(PROMPT, CHAT, "r7", metadata={"mode": "block"})
        await backend.started_event("r7").wait()
        other = await client.run_rollout_async(PROMPT, CHAT, "r8", metadata={"mode": "block"})
        other.cancel()  # stops polling locally only
        with pytest.raises(asyncio.CancelledError):
            await other
        assert (await client.health())["lifecycle"]["active_rollouts"] == 2
        response = await client.cancel_rollout("r7")
        assert response.dispositions == {"r7": "cancelled_running"}
        final = await handle
        assert final.status == RolloutStatus.CANCELLED
        assert final.err_message == "cancelled"
        backend.gate("r8").set()


async def test_api_key_is_sent_on_every_request() -> None:
    async with running(FakeBackend(), api_key="sek") as (http, _):
        async with _client_for(http, api_key="sek") as client:
            assert (await client.run_rollout(PROMPT, CHAT, "r1")).status == RolloutStatus.SUCCESS
            assert (await client.cancel_rollout("r1")).dispositions == {"r1": "not_found"}
        async with _client_for(http) as anonymous:
            with pytest.raises(RolloutProtocolError) as refused:
                await anonymous.run_rollout(PROMPT, CHAT, "r2")
            assert refused.value.status_code == 401
            with pytest.raises(RolloutProtocolError):
                await anonymous.health()


async def test_wait_idle_requires_a_lifecycle_identity() -> None:
    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    app = Starlette(routes=[Route("/health", health)])
    async with serve_app(app) as url, RolloutClient(url=url) as client:
        with pytest.raises(RolloutProtocolError, match="Server has no lifecycle identity"):
            await client.wait_idle()


def test_constructor_validation() -> None:
    with pytest.raises(ValueError, match="admission_timeout_sec must be finite"):
        RolloutClient(url="http://x", admission_timeout_sec=math.inf)
    with pytest.raises(ValueError, match="api_key must be non-empty"):
        RolloutClient(url="http://x", api_key=" ")
    assert RolloutClient(url="http://x/").url == "http://x"


def test_run_rollout_has_run_rollout_async_parameters() -> None:
    """The two parameter lists are written twice (0.3.8's public methods): they must not drift."""
    waits = inspect.signature(RolloutClient.run_rollout)
    admits = inspect.signature(RolloutClient.run_rollout_async)
    assert list(waits.parameters.values()) == list(admits.parameters.values())
    assert waits.return_annotation == "RolloutResultResponse"
    assert RolloutClient.run_rollout.__qualname__ == "RolloutClient.run_rollout"
    assert inspect.iscoroutinefunction(RolloutClient.run_rollout)


async def test_run_rollout_admits_through_the_instances_run_rollout_async() -> None:
    admitted: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    class Recording(RolloutClient):
        async def run_rollout_async(self, *args: Any, **kwargs: Any) -> Any:
            admitted.append((args, kwargs))
            return await super().run_rollout_async(*args, **kwargs)

    backend = FakeBackend()
    async with running(backend) as (http, _):
        backend.gate("r1").set()
        backend.gate("r1:grading").set()
        async with Recording(url=str(http.base_url)) as client:
            result = await client.run_rollout(
                PROMPT, CHAT, "r1", label="42", metadata={"k": 1}, grade=False
            )
    assert result.status == RolloutStatus.SUCCESS
    [(args, kwargs)] = admitted
    assert args == (PROMPT, CHAT, "r1")
    assert {k: kwargs[k] for k in ("label", "metadata", "grade")} == {
        "label": "42",
        "metadata": {"k": 1},
        "grade": False,
    }
