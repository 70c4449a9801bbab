"""The server's HTTP protocol sends a small response's head and body in one transport write.

uvicorn's own protocol code runs here (the class :func:`guarded_protocol` builds, fed raw
request bytes); only the socket is replaced by a transport that records each ``write``, because
what is checked is how many writes a response takes, which a client cannot see.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import uvicorn
from uvicorn.server import ServerState

from osmosis_ai.rollout.server.connections import guarded_protocol

REQUEST = b"GET /x HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"


class _RecordingTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(
            name, default
        )

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _connection(app: Any) -> tuple[Any, _RecordingTransport]:
    """A fresh connection of the server's protocol class, over a recording transport."""
    config = uvicorn.Config(
        app, http=guarded_protocol(), lifespan="off", log_level="critical", access_log=False
    )
    config.load()
    protocol_class: Any = config.http_protocol_class
    protocol = protocol_class(config=config, server_state=ServerState(), app_state={})
    transport = _RecordingTransport()
    protocol.connection_made(transport)
    return protocol, transport


async def _respond(protocol: Any, request: bytes | None) -> None:
    """Feed ``request``; return once the app has finished with it."""
    if request is not None:
        protocol.data_received(request)
    async with asyncio.timeout(5):
        await asyncio.gather(*protocol.tasks)


async def _serve_one(app: Any, request: bytes = REQUEST) -> _RecordingTransport:
    protocol, transport = _connection(app)
    await _respond(protocol, request)
    protocol.connection_lost(None)
    return transport


async def _fixed_length(scope: Any, receive: Any, send: Any) -> None:
    body = b'{"ok":true}'
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def test_a_fixed_length_response_is_one_write() -> None:
    transport = await _serve_one(_fixed_length)
    assert len(transport.writes) == 1
    head, _, body = transport.writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"content-length: 11" in head
    assert body == b'{"ok":true}'


async def test_each_response_on_a_keep_alive_connection_is_one_write() -> None:
    protocol, transport = _connection(_fixed_length)
    await _respond(protocol, REQUEST)
    await _respond(protocol, REQUEST.replace(b"GET", b"HEAD"))
    await _respond(protocol, REQUEST)
    protocol.connection_lost(None)
    assert [w.partition(b"\r\n\r\n")[2] for w in transport.writes] == [
        b'{"ok":true}',
        b"",  # HEAD: the head alone, still one write
        b'{"ok":true}',
    ]
    assert all(w.startswith(b"HTTP/1.1 200 OK\r\n") for w in transport.writes)


async def test_a_streamed_response_is_written_as_it_comes() -> None:
    async def streamed(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"one", "more_body": True})
        await send({"type": "http.response.body", "body": b"two"})

    transport = await _serve_one(streamed)
    # Chunked: the head is not held back; it and each chunk are written on their own.
    assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"transfer-encoding: chunked" in transport.writes[0]
    assert transport.writes[1:] == [b"3\r\none\r\n", b"3\r\ntwo\r\n0\r\n\r\n"]


async def test_a_held_head_is_sent_before_the_connection_closes() -> None:
    async def fails_after_start(scope: Any, receive: Any, send: Any) -> None:
        headers = [(b"content-length", b"5")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        raise RuntimeError("the app failed after starting its response")

    transport = await _serve_one(fails_after_start)
    # As without the coalescing: the head goes out, then uvicorn closes the connection.
    assert transport.closed
    assert len(transport.writes) == 1
    assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert transport.writes[0].endswith(b"\r\n\r\n")


async def test_a_held_head_waits_for_its_body() -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow_body(scope: Any, receive: Any, send: Any) -> None:
        headers = [(b"content-length", b"2")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        started.set()
        await release.wait()
        await send({"type": "http.response.body", "body": b"ok"})

    protocol, transport = _connection(slow_body)
    protocol.data_received(REQUEST)
    await asyncio.wait_for(started.wait(), 5)
    assert transport.writes == []
    assert protocol.transport.get_write_buffer_size() > 0  # held, and counted as buffered
    release.set()
    await _respond(protocol, None)
    protocol.connection_lost(None)
    assert len(transport.writes) == 1
    assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert transport.writes[0].endswith(b"\r\n\r\nok")


@pytest.mark.parametrize("status", [204, 304])
async def test_a_bodiless_status_is_one_write(status: int) -> None:
    async def bodiless(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    transport = await _serve_one(bodiless)
    # No content-length: nothing is held, the head is written as it comes.
    assert transport.writes[0].startswith(b"HTTP/1.1 %d " % status)
    assert transport.writes[0].endswith(b"\r\n\r\n")
