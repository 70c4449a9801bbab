"""0.3.8's ``RolloutClient`` contract: attributes, redirects, mismatched results, timeouts, errors."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

import osmosis_ai.errors
import osmosis_ai.rollout.client as client_module
from osmosis_ai.errors import OsmosisError, RolloutClientError
from osmosis_ai.rollout.client import (
    RolloutAdmissionTimeoutError,
    RolloutClient,
    RolloutHandle,
    RolloutProtocolError,
)
from osmosis_ai.rollout.client import errors as client_errors
from osmosis_ai.rollout.types import RolloutStatus

from ..server.rollout_server_harness import FakeBackend, running, serve_app  # type: ignore[import-not-found]

PROMPT = [{"role": "user", "content": "What is 6 * 7?"}]
CHAT = "http://127.0.0.1:9/v1/rollouts/r1"


def _admission(rollout_id: str) -> dict[str, Any]:
    return {
        "rollout_id": rollout_id,
        "status": "queued",
        "polling_lease_token": "tok",
        "result_wait_timeout_sec": 1.0,
        "polling_lease_timeout_sec": 30.0,
    }


@asynccontextmanager
async def stand_in(*routes: Route) -> AsyncIterator[str]:
    async with serve_app(Starlette(routes=list(routes))) as url:
        yield url


async def test_a_result_for_another_rollout_is_a_protocol_error() -> None:
    async def admit(request: Request) -> Response:
        return JSONResponse(_admission((await request.json())["rollout_id"]), status_code=202)

    async def result(request: Request) -> Response:
        return JSONResponse({"rollout_id": "someone-else", "status": "success"})

    async with (
        stand_in(
            Route("/rollout", admit, methods=["POST"]),
            Route("/rollout/{rid}/result", result),
        ) as url,
        RolloutClient(url=url) as client,
    ):
        handle = await client.run_rollout_async(PROMPT, CHAT, "r1")
        with pytest.raises(RolloutProtocolError, match="'someone-else'") as raised:
            await handle
        assert raised.value.status_code == 200
        assert handle.polling_finished
        assert handle.latest_result is None  # the foreign result was never recorded


@pytest.mark.parametrize("injected", [True, False])
async def test_health_never_follows_a_redirect(injected: bool) -> None:
    hits: list[str] = []

    async def health(request: Request) -> Response:
        hits.append("/health")
        return RedirectResponse("/elsewhere", status_code=307)

    async def elsewhere(request: Request) -> Response:
        hits.append("/elsewhere")
        return JSONResponse({"status": "ok"})

    async with stand_in(Route("/health", health), Route("/elsewhere", elsewhere)) as url:
        # An injected client that follows redirects by itself must not change that.
        http = httpx.AsyncClient(follow_redirects=True) if injected else None
        async with RolloutClient(url=url, http_client=http) as client:
            with pytest.raises(RolloutProtocolError, match="redirects are not followed") as raised:
                await client.health()
        if http is not None:
            await http.aclose()
    assert raised.value.status_code == 307
    assert hits == ["/health"]


async def test_public_attributes_http_client_owns_http_client_and_polling_finished() -> None:
    injected = httpx.AsyncClient()
    async with RolloutClient(url="http://127.0.0.1:1", http_client=injected) as borrowed:
        assert borrowed.http_client is injected
        assert borrowed.owns_http_client is False
    assert not injected.is_closed  # not ours to close
    await injected.aclose()

    backend = FakeBackend()
    async with running(backend) as (http, _):
        client = RolloutClient(url=str(http.base_url))
        assert client.owns_http_client is True
        assert isinstance(client.http_client, httpx.AsyncClient)
        # The client's own httpx client reaches the server too.
        assert (await client.http_client.get(f"{client.url}/health")).status_code == 200
        handle = await client.run_rollout_async(PROMPT, CHAT, "r1", metadata={"mode": "block"})
        assert isinstance(handle, RolloutHandle)
        await backend.started_event("r1").wait()
        assert handle.polling_finished is False
        backend.gate("r1").set()
        result = await handle
        assert result.status == RolloutStatus.SUCCESS
        assert handle.polling_finished is True
        assert handle.result_task.done()

        stopped = await client.run_rollout_async(PROMPT, CHAT, "r2", metadata={"mode": "block"})
        await backend.started_event("r2").wait()
        stopped.cancel()  # local polling only
        with pytest.raises(asyncio.CancelledError):
            await stopped
        assert stopped.polling_finished is True
        backend.gate("r2").set()
        await client.aclose()
        assert client.http_client.is_closed


async def test_a_transport_timeout_is_not_an_admission_timeout() -> None:
    release = asyncio.Event()

    async def hang(request: Request) -> Response:
        await release.wait()
        return JSONResponse({"detail": "too late"}, status_code=503)

    async with stand_in(Route("/rollout", hang, methods=["POST"])) as url:
        try:
            # The request's own read timeout fires well before the admission deadline.
            short = httpx.AsyncClient(timeout=0.2)
            async with RolloutClient(url=url, http_client=short, admission_timeout_sec=30) as c:
                with pytest.raises(httpx.ReadTimeout):
                    await c.run_rollout_async(PROMPT, CHAT, "r1")
            await short.aclose()
            # The admission deadline fires while a request is in flight.
            async with RolloutClient(url=url, admission_timeout_sec=0.2) as client:
                with pytest.raises(RolloutAdmissionTimeoutError) as raised:
                    await client.run_rollout_async(PROMPT, CHAT, "r2")
        finally:
            release.set()
    error = raised.value
    assert "timed out after 0.2 seconds" in str(error)
    assert "admission may have succeeded" in str(error)
    assert isinstance(error, TimeoutError)
    assert isinstance(error.__cause__, TimeoutError)
    assert not isinstance(error.__cause__, RolloutAdmissionTimeoutError)


def test_client_errors_are_the_osmosis_error_tree() -> None:
    assert client_module.__all__ == [
        "RolloutAdmissionTimeoutError",
        "RolloutClient",
        "RolloutHandle",
        "RolloutProtocolError",
    ]
    assert client_errors.RolloutProtocolError is osmosis_ai.errors.RolloutProtocolError
    assert (
        client_errors.RolloutAdmissionTimeoutError is osmosis_ai.errors.RolloutAdmissionTimeoutError
    )
    for cls, stdlib in (
        (RolloutProtocolError, RuntimeError),
        (RolloutAdmissionTimeoutError, TimeoutError),
    ):
        assert issubclass(cls, RolloutClientError)
        assert issubclass(cls, OsmosisError)
        assert issubclass(cls, stdlib)
    assert RolloutProtocolError("x", status_code=409).status_code == 409
    assert RolloutProtocolError("x").status_code == 0


async def test_rollout_ids_with_url_syntax_reach_the_right_rollout() -> None:
    async with running(FakeBackend()) as (http, _), RolloutClient(url=str(http.base_url)) as client:
        for rollout_id in ("a?b=1", "c#d", "50% done", "é"):
            result = await client.run_rollout(PROMPT, CHAT, rollout_id)
            assert result.rollout_id == rollout_id
            assert result.status == RolloutStatus.SUCCESS
        assert (await client.cancel_rollout("a?b=1")).dispositions == {"a?b=1": "not_found"}


@pytest.mark.parametrize(("limit", "interval"), [(0, 1.0), (math.inf, 1.0), (120.0, -1)])
async def test_wait_idle_rejects_timeouts_that_are_not_positive_and_finite(
    limit: float, interval: float
) -> None:
    async with RolloutClient(url="http://127.0.0.1:1") as client:
        with pytest.raises(ValueError, match="wait timeouts must be positive and finite"):
            await client.wait_idle(timeout_sec=limit, poll_interval_sec=interval)
