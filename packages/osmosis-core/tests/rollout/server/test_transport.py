"""The callback client's lean HTTP/1.1 transport against real uvicorn responses."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from rollout_server_harness import free_port, serve_app
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from osmosis_ai.rollout.server.transport import PlainHTTPTransport


async def _echo(request: Request) -> Response:
    body = await request.body()
    return JSONResponse(
        {"len": len(body), "auth": request.headers.get("authorization"), "q": request.url.query}
    )


async def _chunked(request: Request) -> Response:
    async def parts():
        yield b'{"trajectory":'
        await asyncio.sleep(0)
        yield b'{"model_name":"m"}}'

    return StreamingResponse(parts(), media_type="application/json")


async def _closing(request: Request) -> Response:
    return Response(b"bye", headers={"connection": "close"})


async def _empty(request: Request) -> Response:
    return Response(status_code=204)


APP = Starlette(
    routes=[
        Route("/echo", _echo, methods=["POST"]),
        Route("/chunked", _chunked, methods=["POST"]),
        Route("/closing", _closing, methods=["POST"]),
        Route("/empty", _empty, methods=["POST"]),
    ]
)


async def test_bodies_keep_alive_and_reuse() -> None:
    transport = PlainHTTPTransport(max_idle_per_host=2)
    async with (
        serve_app(APP) as url,
        httpx.AsyncClient(transport=transport, base_url=url) as client,
    ):
        echo = await client.post(
            "/echo?x=1", content=b"a" * 5000, headers={"authorization": "Bearer k"}
        )
        assert echo.json() == {"len": 5000, "auth": "Bearer k", "q": "x=1"}
        chunked = await client.post("/chunked", content=b"{}")
        assert chunked.json() == {"trajectory": {"model_name": "m"}}
        closing = await client.post("/closing")
        assert (closing.status_code, closing.text) == (200, "bye")
        empty = await client.post("/empty")
        assert (empty.status_code, empty.content) == (204, b"")
        # Many sequential requests reuse the pooled connections.
        for _ in range(20):
            assert (await client.post("/echo", content=b"x")).json()["len"] == 1
        assert sum(len(v) for v in transport._idle.values()) <= 2


async def test_stale_connection_is_retried_and_errors_are_httpx_errors() -> None:
    port = free_port()
    transport = PlainHTTPTransport()
    async with httpx.AsyncClient(transport=transport, timeout=2) as client:
        async with serve_app(APP, port=port) as url:
            assert (await client.post(f"{url}/echo", content=b"1")).status_code == 200
        # The server restarted on the same port: the pooled connection is dead.
        async with serve_app(APP, port=port) as url:
            assert (await client.post(f"{url}/echo", content=b"2")).status_code == 200
        with pytest.raises(httpx.ConnectError):
            await client.post(f"http://127.0.0.1:{port}/echo", content=b"3")
        with pytest.raises(httpx.UnsupportedProtocol):
            await transport.handle_async_request(httpx.Request("POST", "https://example.invalid/"))


async def test_direct_post_encodes_the_target() -> None:
    import json
    from urllib.parse import urlsplit

    transport = PlainHTTPTransport()
    async with serve_app(APP) as url:
        status, _, content = await transport.post(
            urlsplit(f"{url}/echo?id=é 1&ok=%41"), {"authorization": "Bearer k"}, b"abc", 5.0
        )
    await transport.aclose()
    assert status == 200
    assert json.loads(content) == {"len": 3, "auth": "Bearer k", "q": "id=%C3%A9%201&ok=%41"}
