"""HTTP/1.1 message framing for :mod:`osmosis_ai._util.http_transport`: the request head it writes,
the response head and chunked body it reads, and the request target's %-encoding.

Pure functions over bytes (and one ``StreamReader`` read loop); the connection pool, timeouts
and httpx integration stay in the transport.
"""

from __future__ import annotations

import asyncio
import re
from urllib.parse import quote

import httpx

# Characters kept as they are when a URL's path and query are put on the wire by ``request``
# (reserved characters and existing %-escapes stay; anything else is %-encoded).
_SAFE = "/:@!$&'()*+,;=-._~%?"
# Any character ``quote(..., safe=_SAFE)`` would change: without one, quoting is skipped.
_NEEDS_QUOTING = re.compile(r"[^A-Za-z0-9/:@!$&'()*+,;=\-._~%?]").search


async def next_chunk(reader: asyncio.StreamReader) -> bytes | None:
    """One chunk of a chunked body, or ``None`` after the last one (trailers skipped)."""
    size_line = await reader.readuntil(b"\r\n")
    try:
        size = int(size_line.split(b";", 1)[0].strip(), 16)
    except ValueError:
        raise httpx.RemoteProtocolError(f"malformed chunk size {size_line[:40]!r}") from None
    if size == 0:
        while (await reader.readuntil(b"\r\n")) != b"\r\n":
            pass
        return None
    data = await reader.readexactly(size + 2)
    return data[:-2]


def quoted_target(text: str) -> str:
    return quote(text, safe=_SAFE) if _NEEDS_QUOTING(text) else text


def request_head(request: httpx.Request, body: bytes) -> bytes:
    """The request line and headers; the body is always sent whole, with a Content-Length."""
    lines = [request.method.encode() + b" " + request.url.raw_path + b" HTTP/1.1"]
    has_length = False
    for name, value in request.headers.raw:
        lower = name.lower()
        if lower == b"transfer-encoding":
            continue
        if lower == b"content-length":
            has_length = True
            value = str(len(body)).encode()
        lines.append(name + b": " + value)
    if not has_length and (body or request.method in ("POST", "PUT", "PATCH")):
        lines.append(b"Content-Length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n"


def parse_head(
    head: bytes, method: str
) -> tuple[int, list[tuple[bytes, bytes]], int | None, bool, bool]:
    """``(status, headers, body length or None, chunked, keep-alive)``; header names are
    lower-cased, as httpx's default transport (h11) hands them over."""
    lines = head[:-4].split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise httpx.RemoteProtocolError(f"malformed status line {lines[0][:80]!r}")
    status = int(parts[1])
    headers: list[tuple[bytes, bytes]] = []
    length: int | None = None
    chunked = False
    keep_alive = parts[0] == b"HTTP/1.1"
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name, value = name.strip().lower(), value.strip()
        headers.append((name, value))
        if name == b"content-length":
            if not value.isdigit():
                raise httpx.RemoteProtocolError(f"malformed content-length {value[:40]!r}")
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif name == b"connection":
            token = value.lower()
            keep_alive = b"close" not in token and (keep_alive or b"keep-alive" in token)
    if status in (204, 304) or 100 <= status < 200 or method == "HEAD":
        return status, headers, 0, False, keep_alive
    if chunked:
        length = None
    return status, headers, length, chunked, keep_alive
