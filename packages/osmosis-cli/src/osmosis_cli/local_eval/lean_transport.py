"""A lean HTTP/1.1 transport for httpx, for the eval's plain-``http://`` hops.

Why: every work item costs the controller about three HTTP requests (admit, poll, and the
proxied model call). With httpx's default transport (httpcore over anyio) each request costs
about a millisecond of CPU, most of it in connection-pool bookkeeping, tracing and anyio
wrappers. This transport keeps the httpx *API* (so ``RolloutClient`` and the proxy are
unchanged) and speaks HTTP/1.1 directly on asyncio streams: keep-alive connections per host,
``Content-Length`` and chunked bodies, streamed responses, httpx's timeouts and exception
types (so callers' retry logic still sees ``httpx.TransportError`` subclasses).

Scope: plain HTTP only (TLS upstreams keep httpx's default transport), no proxies, no
HTTP/2, no ``Expect: 100-continue``. A request on a *reused* connection that gets EOF before
any byte of a response is retried once on a fresh connection (the server closed the idle
connection before reading the request), as httpcore does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

_MAX_HEAD = 64 * 1024
_Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class _Stale(Exception):
    """EOF before the response started on a reused connection."""


class LeanTransport(httpx.AsyncBaseTransport):
    """Keep-alive HTTP/1.1 over asyncio streams (``http://`` only)."""

    def __init__(self, *, max_idle_per_host: int = 32) -> None:
        self._idle: dict[tuple[str, int], list[_Conn]] = {}
        self._max_idle = max_idle_per_host
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme != "http":
            raise httpx.UnsupportedProtocol(
                f"LeanTransport speaks plain http only, not {request.url.scheme}"
            )
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        body = await request.aread()
        key = (request.url.host, request.url.port or 80)
        head = _request_head(request, body)
        for attempt in (1, 2):
            conn, reused = await self._connection(key, timeouts.get("connect"))
            try:
                return await self._exchange(conn, key, head + body, timeouts.get("read"), reused)
            except _Stale:
                _close(conn)
                if attempt == 2:
                    raise httpx.RemoteProtocolError(
                        "server closed the connection without a response"
                    ) from None
        raise AssertionError("unreachable")

    async def _connection(
        self, key: tuple[str, int], connect_timeout: float | None
    ) -> tuple[_Conn, bool]:
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if not conn[0].at_eof() and not conn[1].is_closing():
                return conn, True
            _close(conn)
        try:
            async with asyncio.timeout(connect_timeout):
                return await asyncio.open_connection(key[0], key[1], limit=_MAX_HEAD), False
        except TimeoutError:
            raise httpx.ConnectTimeout(f"connecting to {key[0]}:{key[1]} timed out") from None
        except OSError as exc:
            raise httpx.ConnectError(f"cannot connect to {key[0]}:{key[1]}: {exc}") from exc

    async def _exchange(
        self,
        conn: _Conn,
        key: tuple[str, int],
        payload: bytes,
        read_timeout: float | None,
        reused: bool,
    ) -> httpx.Response:
        reader, writer = conn
        try:
            writer.write(payload)
            async with asyncio.timeout(read_timeout):
                await writer.drain()
                head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            if reused and not exc.partial:
                raise _Stale from None
            _close(conn)
            raise httpx.RemoteProtocolError(
                "connection closed while reading the response head"
            ) from exc
        except TimeoutError:
            _close(conn)
            raise httpx.ReadTimeout("timed out waiting for the response") from None
        except (ConnectionError, OSError) as exc:
            if reused:
                raise _Stale from None
            _close(conn)
            raise httpx.ReadError(f"connection failed: {exc}") from exc
        except asyncio.LimitOverrunError as exc:
            _close(conn)
            raise httpx.RemoteProtocolError("response head too large") from exc
        status, headers, length, chunked, keep_alive = _parse_head(head)
        stream = _BodyStream(self, conn, key, length, chunked, keep_alive, read_timeout)
        if length == 0 and not chunked:
            stream.finish()
        return httpx.Response(
            status, headers=headers, stream=stream, extensions={"http_version": b"HTTP/1.1"}
        )

    def _release(self, key: tuple[str, int], conn: _Conn) -> None:
        idle = self._idle.setdefault(key, [])
        if self._closed or len(idle) >= self._max_idle:
            _close(conn)
        else:
            idle.append(conn)

    async def aclose(self) -> None:
        self._closed = True
        for conns in self._idle.values():
            for conn in conns:
                _close(conn)
        self._idle.clear()


class _BodyStream(httpx.AsyncByteStream):
    def __init__(
        self,
        transport: LeanTransport,
        conn: _Conn,
        key: tuple[str, int],
        length: int | None,
        chunked: bool,
        keep_alive: bool,
        timeout: float | None,
    ) -> None:
        self._transport = transport
        self._conn: _Conn | None = conn
        self._key = key
        self._length = length
        self._chunked = chunked
        self._keep_alive = keep_alive
        self._timeout = timeout

    def finish(self) -> None:
        """The body was read completely: the connection can serve the next request."""
        conn, self._conn = self._conn, None
        if conn is not None:
            if self._keep_alive:
                self._transport._release(self._key, conn)
            else:
                _close(conn)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._conn is None:
            return
        reader = self._conn[0]
        timeout = self._timeout  # per read, as in httpx: the time allowed between bytes
        try:
            if self._chunked:
                while True:
                    async with asyncio.timeout(timeout):
                        piece = await _next_chunk(reader)
                    if piece is None:
                        break
                    yield piece
            elif self._length is not None:
                if self._length:
                    async with asyncio.timeout(timeout):
                        data = await reader.readexactly(self._length)
                    yield data
            else:  # body delimited by connection close
                self._keep_alive = False
                while True:
                    async with asyncio.timeout(timeout):
                        data = await reader.read(65536)
                    if not data:
                        break
                    yield data
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            self.aclose_now()
            raise httpx.RemoteProtocolError("connection closed in the middle of the body") from exc
        except TimeoutError:
            self.aclose_now()
            raise httpx.ReadTimeout("timed out reading the response body") from None
        except (ConnectionError, OSError) as exc:
            self.aclose_now()
            raise httpx.ReadError(f"connection failed while reading the body: {exc}") from exc
        self.finish()

    def aclose_now(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            _close(conn)

    async def aclose(self) -> None:
        # Closed before the body was fully read: the connection is in an unknown state.
        self.aclose_now()


async def _next_chunk(reader: asyncio.StreamReader) -> bytes | None:
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


def _request_head(request: httpx.Request, body: bytes) -> bytes:
    target = request.url.raw_path
    lines = [request.method.encode() + b" " + target + b" HTTP/1.1"]
    has_length = False
    for name, value in request.headers.raw:
        lower = name.lower()
        if lower == b"transfer-encoding":
            continue  # the body is always sent whole, with a Content-Length
        if lower == b"content-length":
            has_length = True
            value = str(len(body)).encode()
        lines.append(name + b": " + value)
    if not has_length and (body or request.method in ("POST", "PUT", "PATCH")):
        lines.append(b"Content-Length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _parse_head(head: bytes) -> tuple[int, list[tuple[bytes, bytes]], int | None, bool, bool]:
    lines = head[:-4].split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
        raise httpx.RemoteProtocolError(f"malformed status line {lines[0][:80]!r}")
    status = int(parts[1])
    headers: list[tuple[bytes, bytes]] = []
    length: int | None = None
    chunked = False
    keep_alive = parts[0] == b"HTTP/1.1"
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        value = value.strip()
        headers.append((name, value))
        lower = name.lower()
        if lower == b"content-length":
            length = int(value)
        elif lower == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif lower == b"connection":
            token = value.lower()
            keep_alive = b"close" not in token and (keep_alive or b"keep-alive" in token)
    if status in (204, 304) or 100 <= status < 200:
        length = 0
    if chunked:
        length = None
    return status, headers, length, chunked, keep_alive


def _close(conn: _Conn) -> None:
    with contextlib.suppress(Exception):
        conn[1].close()


def lean_async_client(**kwargs: Any) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` on :class:`LeanTransport` (for ``http://`` URLs)."""
    return httpx.AsyncClient(transport=LeanTransport(), **kwargs)
