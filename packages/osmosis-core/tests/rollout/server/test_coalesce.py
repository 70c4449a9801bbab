"""Writes made to a server connection in one event-loop turn leave in one transport write.

uvicorn's own protocol code runs here (the server's protocol class from
:func:`guarded_protocol`, and uvicorn's h11 protocol over the same wrapper), fed raw request
bytes; only the socket is replaced by a transport that records each ``write``, because what is
checked is how many writes a response takes, which a client cannot see. Header names are
compared case-insensitively: uvicorn versions differ in how they spell them.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import uvicorn
from uvicorn.server import ServerState

from osmosis_ai.rollout.server._impl.coalesce import FLUSH_AT, TurnCoalescingTransport
from osmosis_ai.rollout.server._impl.connections import guarded_protocol

REQUEST = b"GET /x HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"
BODY = b'{"ok":true}'


class _RecordingTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: Any) -> None:
        assert not self.closed, "written after close"
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = self.closed = True

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


def _server_connection(app: Any) -> tuple[Any, _RecordingTransport]:
    """A connection of the rollout server's protocol class over a recording transport."""
    config = uvicorn.Config(
        app, http=guarded_protocol(), lifespan="off", log_level="critical", access_log=False
    )
    config.load()
    protocol_class: Any = config.http_protocol_class
    protocol = protocol_class(config=config, server_state=ServerState(), app_state={})
    transport = _RecordingTransport()
    protocol.connection_made(transport)
    return protocol, transport


def _h11_connection(app: Any) -> tuple[Any, _RecordingTransport]:
    """uvicorn's h11 protocol over the wrapper (the other HTTP implementation uvicorn picks)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    config = uvicorn.Config(app, http="h11", lifespan="off", log_level="critical")
    config.load()
    protocol = H11Protocol(config=config, server_state=ServerState(), app_state={})
    transport = _RecordingTransport()
    protocol.connection_made(TurnCoalescingTransport(transport, asyncio.get_running_loop()))
    return protocol, transport


CONNECTIONS = {"server protocol": _server_connection, "h11": _h11_connection}


async def _respond(protocol: Any, request: bytes | None) -> None:
    """Feed ``request``; return once the app has finished with it and a turn has passed."""
    if request is not None:
        protocol.data_received(request)
    async with asyncio.timeout(5):
        await asyncio.gather(*protocol.tasks)
    await asyncio.sleep(0)  # the turn in which the pending bytes are sent


async def _fixed_length(scope: Any, receive: Any, send: Any) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(BODY))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": BODY})


@pytest.mark.parametrize("connect", CONNECTIONS.values(), ids=list(CONNECTIONS))
async def test_a_response_is_one_write(connect: Any) -> None:
    protocol, transport = connect(_fixed_length)
    await _respond(protocol, REQUEST)
    assert len(transport.writes) == 1
    head, _, body = transport.writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"content-length: 11" in head.lower()
    assert body == BODY
    protocol.connection_lost(None)


@pytest.mark.parametrize("connect", CONNECTIONS.values(), ids=list(CONNECTIONS))
async def test_each_response_on_a_keep_alive_connection_is_one_write(connect: Any) -> None:
    protocol, transport = connect(_fixed_length)
    for request in (REQUEST, REQUEST.replace(b"GET", b"HEAD"), REQUEST):
        await _respond(protocol, request)
    assert [w.partition(b"\r\n\r\n")[2] for w in transport.writes] == [BODY, b"", BODY]
    assert all(w.startswith(b"HTTP/1.1 200 OK\r\n") for w in transport.writes)
    protocol.connection_lost(None)


async def test_nothing_is_sent_before_the_turn_ends_and_the_buffer_counts_it() -> None:
    seen: list[tuple[int, int]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await _fixed_length(scope, receive, send)
        # Same turn: the whole response is pending, and counted as buffered.
        seen.append((len(transport.writes), protocol.transport.get_write_buffer_size()))

    protocol, transport = _server_connection(app)
    await _respond(protocol, REQUEST)
    assert seen
    assert seen[0][0] == 0
    assert seen[0][1] > len(BODY)
    assert len(transport.writes) == 1
    assert len(transport.writes[0]) == seen[0][1]
    assert protocol.transport.get_write_buffer_size() == 0
    protocol.connection_lost(None)


async def test_a_response_streamed_over_turns_is_sent_turn_by_turn() -> None:
    async def streamed(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"one", "more_body": True})
        await asyncio.sleep(0.01)  # later turns
        await send({"type": "http.response.body", "body": b"two"})

    protocol, transport = _server_connection(streamed)
    await _respond(protocol, REQUEST)
    # The head and the first chunk share a turn; the last chunk leaves in a later one.
    assert len(transport.writes) == 2
    head, _, first = transport.writes[0].partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower()
    assert first == b"3\r\none\r\n"
    assert transport.writes[1] == b"3\r\ntwo\r\n0\r\n\r\n"
    protocol.connection_lost(None)


async def test_a_large_body_written_in_one_turn_is_not_held() -> None:
    big = b"x" * (FLUSH_AT + 1)
    sent_before_yielding: list[int] = []

    async def large(scope: Any, receive: Any, send: Any) -> None:
        headers = [(b"content-length", b"%d" % (2 * len(big)))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": big, "more_body": True})
        sent_before_yielding.append(sum(map(len, transport.writes)))
        await send({"type": "http.response.body", "body": big})

    protocol, transport = _server_connection(large)
    await _respond(protocol, REQUEST)
    # Over FLUSH_AT pending: sent at once, so the transport's flow control sees it.
    assert sent_before_yielding
    assert sent_before_yielding[0] > len(big)
    assert b"".join(transport.writes).partition(b"\r\n\r\n")[2] == big + big
    protocol.connection_lost(None)


async def test_close_sends_what_is_pending_and_abort_drops_it() -> None:
    loop = asyncio.get_running_loop()
    closed, aborted = _RecordingTransport(), _RecordingTransport()
    first, second = TurnCoalescingTransport(closed, loop), TurnCoalescingTransport(aborted, loop)
    first.writelines([b"head\r\n\r\n", bytearray(b"body")])
    first.close()
    assert closed.writes == [b"head\r\n\r\nbody"]
    assert closed.closed
    second.write(b"dropped")
    second.abort()
    await asyncio.sleep(0)  # the flush scheduled by the write finds nothing left
    assert aborted.writes == []
    assert aborted.aborted


async def test_a_response_with_connection_close_is_sent_before_the_close() -> None:
    protocol, transport = _server_connection(_fixed_length)
    await _respond(protocol, REQUEST.replace(b"\r\n\r\n", b"\r\nconnection: close\r\n\r\n"))
    assert transport.closed
    assert len(transport.writes) == 1
    assert transport.writes[0].endswith(b"\r\n\r\n" + BODY)
    protocol.connection_lost(None)
