"""PlainHTTPTransport against real sockets: real uvicorn apps and scripted raw HTTP servers.

Both users are covered: the httpx client path (the local eval's controller and policy proxy,
streamed SSE included) and the direct ``post`` path (the rollout server's callbacks).
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import urlsplit

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from osmosis_ai._util.http_transport import PlainHTTPTransport
from osmosis_ai.testing import ScriptedPolicyServer, serve_app

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


# ---- a real uvicorn app ------------------------------------------------------------------


async def _echo(request: Request) -> Response:
    body = await request.body()
    return JSONResponse(
        {
            "len": len(body),
            "auth": request.headers.get("authorization"),
            "q": request.url.query,
            "te": request.headers.get("transfer-encoding"),
        },
        headers={"Retry-After": "3"},
    )


async def _chunked(request: Request) -> Response:
    async def parts() -> AsyncIterator[bytes]:
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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---- scripted raw servers ----------------------------------------------------------------


@pytest.fixture
async def raw_server() -> AsyncIterator[Callable[[Handler], Awaitable[str]]]:
    """``await raw_server(handler)`` serves ``handler`` per connection; returns the base URL."""
    servers: list[asyncio.Server] = []

    async def start(handler: Handler) -> str:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                await handler(reader, writer)
            finally:
                writer.close()  # else the server's wait_closed() waits for this connection

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        servers.append(server)
        return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


async def _read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return head, await reader.readexactly(length)


# ---- the httpx client path ---------------------------------------------------------------


async def test_bodies_keep_alive_and_reuse_against_uvicorn() -> None:
    transport = PlainHTTPTransport(max_idle_per_host=2)
    async with (
        serve_app(APP) as url,
        httpx.AsyncClient(transport=transport, base_url=url) as client,
    ):
        echo = await client.post(
            "/echo?x=1", content=b"a" * 5000, headers={"authorization": "Bearer k"}
        )
        assert echo.json() == {"len": 5000, "auth": "Bearer k", "q": "x=1", "te": None}
        assert echo.headers["retry-after"] == "3"
        chunked = await client.post("/chunked", content=b"{}")
        assert chunked.json() == {"trajectory": {"model_name": "m"}}
        closing = await client.post("/closing")
        assert (closing.status_code, closing.text) == (200, "bye")
        empty = await client.post("/empty")
        assert (empty.status_code, empty.content) == (204, b"")

        # A streamed request body is sent whole with a Content-Length, never chunked.
        async def parts() -> AsyncIterator[bytes]:
            yield b"ab"
            yield b"cde"

        streamed = await client.post("/echo", content=parts())
        assert streamed.json()["len"] == 5
        assert streamed.json()["te"] is None
        # Many sequential requests reuse the pooled connections.
        for _ in range(20):
            assert (await client.post("/echo", content=b"x")).json()["len"] == 1
        assert sum(len(v) for v in transport._idle.values()) <= 2


async def test_keep_alive_and_sse_streaming_against_the_policy_server() -> None:
    async with (
        ScriptedPolicyServer("instant") as policy,
        httpx.AsyncClient(transport=PlainHTTPTransport()) as client,
    ):
        for _ in range(3):
            response = await client.post(f"{policy.url}/chat/completions", json={"messages": []})
            assert response.status_code == 200
            assert response.json()["choices"][0]["message"]["content"] == "ok"
        async with client.stream(
            "POST", f"{policy.url}/chat/completions", json={"messages": [], "stream": True}
        ) as streamed:
            events = [line async for line in streamed.aiter_lines() if line.startswith("data:")]
    assert events[-1] == "data: [DONE]"
    assert len({r.headers.get("host") for r in policy.requests}) == 1


async def test_chunked_and_close_delimited_bodies(
    raw_server: Callable[[Handler], Awaitable[str]],
) -> None:
    async def chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
            b"5\r\nhello\r\n6;x=1\r\n world\r\n0\r\nx-trailer: 1\r\n\r\n"
        )
        await _read_request(reader)  # the connection is reused for the second request
        writer.write(b"HTTP/1.0 200 OK\r\n\r\nuntil close")
        await writer.drain()
        writer.close()

    url = await raw_server(chunked)
    async with httpx.AsyncClient(transport=PlainHTTPTransport()) as client:
        first = await client.get(url)
        second = await client.get(url)
    assert first.text == "hello world"
    assert second.text == "until close"


async def test_bodyless_responses_keep_the_connection(
    raw_server: Callable[[Handler], Awaitable[str]],
) -> None:
    connections: list[int] = []

    async def bodyless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        while True:
            try:
                head, _ = await _read_request(reader)
            except asyncio.IncompleteReadError:
                return
            if head.startswith(b"HEAD"):  # announces a length but sends no body
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 42\r\n\r\n")
            else:
                writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
            await writer.drain()

    url = await raw_server(bodyless)
    async with httpx.AsyncClient(transport=PlainHTTPTransport()) as client:
        responses = [await client.delete(url), await client.head(url), await client.delete(url)]
    assert [r.status_code for r in responses] == [204, 200, 204]
    assert all(r.content == b"" for r in responses)
    assert len(connections) == 1


async def test_stale_idle_connection_is_retried_once(
    raw_server: Callable[[Handler], Awaitable[str]],
) -> None:
    connections = {"n": 0}

    async def one_shot(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections["n"] += 1
        _, body = await _read_request(reader)
        payload = json.dumps({"echo": body.decode(), "conn": connections["n"]}).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-length: "
            + str(len(payload)).encode()
            + b"\r\n\r\n"
            + payload
        )
        await writer.drain()
        # Close right away although the response allowed keep-alive (an idle timeout).
        writer.close()

    url = await raw_server(one_shot)
    async with httpx.AsyncClient(transport=PlainHTTPTransport()) as client:
        first = await client.post(url, content=b"a")
        await asyncio.sleep(0)  # let the close arrive
        second = await client.post(url, content=b"b")
    assert first.json() == {"echo": "a", "conn": 1}
    assert second.json() == {"echo": "b", "conn": 2}


async def test_restarted_server_is_reached_on_a_fresh_connection() -> None:
    port = _free_port()
    transport = PlainHTTPTransport()
    async with httpx.AsyncClient(transport=transport, timeout=2) as client:
        async with serve_app(APP, port=port) as url:
            assert (await client.post(f"{url}/echo", content=b"1")).status_code == 200
        # The server restarted on the same port: the pooled connection is dead.
        async with serve_app(APP, port=port) as url:
            assert (await client.post(f"{url}/echo", content=b"2")).status_code == 200
        with pytest.raises(httpx.ConnectError):
            await client.post(f"http://127.0.0.1:{port}/echo", content=b"3")


async def test_errors_are_httpx_transport_errors(
    raw_server: Callable[[Handler], Awaitable[str]],
) -> None:
    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        await reader.read()  # never answers; returns when the client gives up and closes

    async def truncate(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort")
        await writer.drain()
        writer.close()

    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"SMTP ready\r\n\r\n")
        await writer.drain()

    async def bad_chunk(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n")
        await writer.drain()
        await reader.read()

    hang_url = await raw_server(hang)
    truncate_url = await raw_server(truncate)
    garbage_url = await raw_server(garbage)
    bad_chunk_url = await raw_server(bad_chunk)
    transport = PlainHTTPTransport()
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(httpx.ReadTimeout):
            await client.get(hang_url, timeout=0.2)
        with pytest.raises(httpx.RemoteProtocolError):
            await client.get(truncate_url)
        with pytest.raises(httpx.RemoteProtocolError, match="malformed status line"):
            await client.get(garbage_url)
        with pytest.raises(httpx.RemoteProtocolError, match="malformed chunk size"):
            await client.get(bad_chunk_url)
        with pytest.raises(httpx.ConnectError):
            await client.get("http://127.0.0.1:9/")
        with pytest.raises(httpx.UnsupportedProtocol):
            await client.get("https://127.0.0.1:9/")
        with pytest.raises(httpx.UnsupportedProtocol):
            await transport.handle_async_request(httpx.Request("POST", "https://example.invalid/"))
    assert transport._idle == {}


# ---- the direct post path (callbacks) ----------------------------------------------------


async def test_direct_post_encodes_the_target_and_reuses_the_connection() -> None:
    transport = PlainHTTPTransport()
    async with serve_app(APP) as url:
        status, headers, content = await transport.request(
            "POST",
            urlsplit(f"{url}/echo?id=é 1&ok=%41"),
            {"authorization": "Bearer k"},
            b"abc",
            5.0,
        )
        chunked = await transport.request("POST", urlsplit(f"{url}/chunked"), {}, b"{}", 5.0)
        assert sum(len(v) for v in transport._idle.values()) == 1
    await transport.aclose()
    assert status == 200
    assert json.loads(content) == {
        "len": 3,
        "auth": "Bearer k",
        "q": "id=%C3%A9%201&ok=%41",
        "te": None,
    }
    assert (b"retry-after", b"3") in headers  # names are lower-cased
    assert json.loads(chunked[2]) == {"trajectory": {"model_name": "m"}}
    assert transport._idle == {}


async def test_direct_post_errors_are_httpx_errors(
    raw_server: Callable[[Handler], Awaitable[str]],
) -> None:
    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        await reader.read()

    async def truncate(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 500 Oops\r\ncontent-length: 100\r\n\r\nshort")
        await writer.drain()
        writer.close()

    url = await raw_server(hang)
    truncate_url = await raw_server(truncate)
    transport = PlainHTTPTransport()
    with pytest.raises(httpx.ReadTimeout):
        await transport.request("POST", urlsplit(url), {}, b"{}", 0.2)
    with pytest.raises(httpx.RemoteProtocolError, match="middle of the body"):
        await transport.request("POST", urlsplit(truncate_url), {}, b"{}", 1.0)
    with pytest.raises(httpx.ConnectError):
        await transport.request("POST", urlsplit("http://127.0.0.1:9/"), {}, b"{}", 1.0)
    await transport.aclose()


async def test_direct_request_waits_for_a_late_body_under_the_read_timeout(
    raw_server: Callable[[Handler], Awaitable[str]],
) -> None:
    """A body already buffered with the head is read without a timeout scope; one still on its
    way is waited for, and a wait longer than the read timeout is a body-read timeout."""
    resume = asyncio.Event()

    async def late(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nab")
        await writer.drain()
        await resume.wait()
        writer.write(b"cde")
        await writer.drain()
        await reader.read()

    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nab")
        await writer.drain()
        await reader.read()

    late_url = await raw_server(late)
    stall_url = await raw_server(stall)
    transport = PlainHTTPTransport()
    pending = asyncio.create_task(transport.request("GET", urlsplit(late_url), {}, b"", 5.0))
    await asyncio.sleep(0.05)  # the head and part of the body arrive; the request waits
    assert not pending.done()
    resume.set()
    async with asyncio.timeout(5):  # a bound for a broken transport, not a timing check
        assert (await pending)[2] == b"abcde"
        with pytest.raises(httpx.ReadTimeout, match="response body"):
            await transport.request("GET", urlsplit(stall_url), {}, b"", 0.2)
    await transport.aclose()
