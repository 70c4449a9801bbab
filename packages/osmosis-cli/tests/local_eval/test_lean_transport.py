"""LeanTransport against real sockets: a scripted raw HTTP server and a real uvicorn app."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from osmosis_ai.testing import ScriptedPolicyServer
from osmosis_cli.local_eval.lean_transport import LeanTransport

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


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


async def test_roundtrip_and_keep_alive_against_uvicorn() -> None:
    async with (
        ScriptedPolicyServer("instant") as policy,
        httpx.AsyncClient(transport=LeanTransport()) as client,
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
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=1\r\n world\r\n0\r\nx-trailer: 1\r\n\r\n"
        )
        await _read_request(reader)  # the connection is reused for the second request
        writer.write(b"HTTP/1.0 200 OK\r\n\r\nuntil close")
        await writer.drain()
        writer.close()

    url = await raw_server(chunked)
    async with httpx.AsyncClient(transport=LeanTransport()) as client:
        first = await client.get(url)
        second = await client.get(url)
    assert first.text == "hello world"
    assert second.text == "until close"


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
    async with httpx.AsyncClient(transport=LeanTransport()) as client:
        first = await client.post(url, content=b"a")
        await asyncio.sleep(0)  # let the close arrive
        second = await client.post(url, content=b"b")
    assert first.json() == {"echo": "a", "conn": 1}
    assert second.json() == {"echo": "b", "conn": 2}


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

    hang_url = await raw_server(hang)
    truncate_url = await raw_server(truncate)
    async with httpx.AsyncClient(transport=LeanTransport()) as client:
        with pytest.raises(httpx.ReadTimeout):
            await client.get(hang_url, timeout=0.2)
        with pytest.raises(httpx.RemoteProtocolError):
            await client.get(truncate_url)
        with pytest.raises(httpx.ConnectError):
            await client.get("http://127.0.0.1:9/")
        with pytest.raises(httpx.UnsupportedProtocol):
            await client.get("https://127.0.0.1:9/")


async def test_bodyless_statuses(raw_server: Callable[[Handler], Awaitable[str]]) -> None:
    async def no_content(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                await _read_request(reader)
            except asyncio.IncompleteReadError:
                return
            writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
            await writer.drain()

    url = await raw_server(no_content)
    async with httpx.AsyncClient(transport=LeanTransport()) as client:
        responses = [await client.delete(url) for _ in range(2)]
    assert [r.status_code for r in responses] == [204, 204]
    assert all(r.content == b"" for r in responses)
