"""serve_app: a real uvicorn server on loopback, lifespan run on entry and on exit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from osmosis_ai.testing import serve_app


async def test_serves_over_http_and_runs_the_lifespan() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        events.append("startup")
        yield
        events.append("shutdown")

    async def hello(request: Request) -> PlainTextResponse:
        return PlainTextResponse("hi")

    app = Starlette(routes=[Route("/", hello)], lifespan=lifespan)
    async with serve_app(app) as url:
        assert url.startswith("http://127.0.0.1:")
        assert events == ["startup"]
        async with httpx.AsyncClient(base_url=url) as client:
            response = await client.get("/")
        assert (response.status_code, response.text) == (200, "hi")
    assert events == ["startup", "shutdown"]
