"""HTTP/1.1 framing (osmosis_ai._util.http1): the bytes the transport writes and how it reads heads
and chunked bodies. The transport itself is tested against real servers in test_http_transport."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from osmosis_ai._util.http1 import next_chunk, parse_head, quoted_target, request_head


def test_request_head_always_states_the_body_length() -> None:
    request = httpx.Request(
        "POST", "http://h/p?q=1", headers={"transfer-encoding": "chunked", "x-a": "b"}
    )
    head = request_head(request, b"abc")
    assert head.startswith(b"POST /p?q=1 HTTP/1.1\r\n")
    assert head.endswith(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert b"x-a: b" in lines
    assert not any(line.lower().startswith(b"transfer-encoding") for line in lines)
    assert [line for line in lines if line.lower().startswith(b"content-length")] == [
        b"Content-Length: 3"
    ]
    # httpx's own Content-Length is rewritten to the body actually sent
    stated = httpx.Request("PUT", "http://h/", headers={"content-length": "99"})
    assert b"content-length: 0" in request_head(stated, b"").split(b"\r\n")
    assert b"Content-Length" not in request_head(httpx.Request("GET", "http://h/"), b"")


def test_parse_head_reads_length_chunking_and_keep_alive() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Y: z\r\n\r\n"
    assert parse_head(head, "POST") == (
        200,
        [(b"content-length", b"5"), (b"x-y", b"z")],
        5,
        False,
        True,
    )
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 9\r\n\r\n"
    assert parse_head(chunked, "GET")[2:] == (None, True, True)
    assert parse_head(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", "GET")[4] is False
    assert parse_head(b"HTTP/1.0 200 OK\r\n\r\n", "GET")[4] is False
    assert parse_head(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n", "GET")[4] is True
    # no body whatever the headers say
    assert parse_head(b"HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n", "GET")[2] == 0
    assert parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n", "HEAD")[2] == 0


@pytest.mark.parametrize(
    ("head", "message"),
    [
        (b"SMTP ready\r\n\r\n", "malformed status line"),
        (b"HTTP/1.1 abc OK\r\n\r\n", "malformed status line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "malformed content-length"),
    ],
)
def test_parse_head_rejects_malformed_heads(head: bytes, message: str) -> None:
    with pytest.raises(httpx.RemoteProtocolError, match=message):
        parse_head(head, "GET")


async def test_next_chunk_reads_chunks_then_skips_trailers() -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(b"3;ext=1\r\nabc\r\na\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n")
    reader.feed_eof()
    assert [await next_chunk(reader), await next_chunk(reader)] == [b"abc", b"0123456789"]
    assert await next_chunk(reader) is None
    bad = asyncio.StreamReader()
    bad.feed_data(b"zz\r\n")
    with pytest.raises(httpx.RemoteProtocolError, match="malformed chunk size"):
        await next_chunk(bad)


def test_quoted_target_encodes_only_what_is_not_allowed_on_the_wire() -> None:
    assert quoted_target("/v1/rollouts/r-1?x=%41&y=b") == "/v1/rollouts/r-1?x=%41&y=b"
    assert quoted_target("/a b/é") == "/a%20b/%C3%A9"
