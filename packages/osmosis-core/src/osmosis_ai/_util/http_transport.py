"""A lean HTTP/1.1 transport for httpx, for plain-``http://`` hops on trusted networks.

Why: the rollout server's 0.3.0 callbacks (two POSTs per rollout), ``RolloutClient``'s long
polls (one connection per rollout in flight) and the local eval's controller and policy proxy
(about three requests per work item) all talk plain HTTP, mostly on loopback. Through httpx's
default transport (httpcore over anyio) each request costs about a millisecond of CPU, most of
it connection-pool bookkeeping, tracing and anyio wrappers, and the pool's bookkeeping grows
with the connections in use (about 15 ms per request with 200 long polls open). This
transport keeps the httpx *API* and exception types (so callers' retry logic still sees
``httpx.TransportError`` subclasses) and speaks HTTP/1.1 directly on asyncio streams, at about
a third of that cost: keep-alive connections per host, ``Content-Length``, chunked and
read-to-close bodies, streamed responses (SSE passthrough), httpx's connect and read timeouts
(the read timeout bounds each wait for bytes, as in httpx). The message framing (heads,
chunks, the request target's encoding) is in :mod:`osmosis_ai._util.http1`.

:meth:`PlainHTTPTransport.request` is a faster path still for callers that need
neither httpx request nor response objects (URL parsing and header models cost more than the
exchange); ``RolloutClient`` polls through it.

It lives at the top of ``osmosis_ai`` because both the rollout server and the CLI (which
installs osmosis-core without the server extra) use it; it needs only httpx, a core dependency.

Scope: ``http://`` only (callers mount httpx's default transport for ``https://``), no proxies,
no HTTP/2, no ``Expect: 100-continue``. A request on a *reused* connection that gets EOF or a
reset before any byte of a response is retried once on a fresh connection: the peer closed the
idle connection before reading the request.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from functools import cache
from typing import TYPE_CHECKING
from urllib.parse import SplitResult

import httpx

from osmosis_ai._util.http1 import next_chunk, parse_head, quoted_target, request_head

if TYPE_CHECKING:
    import ssl


class _Reader(asyncio.StreamReader):
    """A ``StreamReader`` that tells how many bytes it holds (the body of a small response
    usually arrives with its head; reading it then needs no timeout scope: no wait happens)."""

    def buffered(self) -> int:
        # StreamReader's own buffer (CPython 3.11-3.13; not in the stubs). Should a later
        # Python rename it, this answers 0 and every body read keeps its timeout scope.
        return len(getattr(self, "_buffer", b""))


_Conn = tuple[_Reader, asyncio.StreamWriter]
_Key = tuple[str, int]
_MAX_HEAD = 64 * 1024
_MAX_AUTHORITIES = 256  # distinct hosts remembered; more is cleared and parsed again


@cache
def shared_tls_context() -> ssl.SSLContext:
    """httpx's default TLS context (certifi's CAs, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``), made
    once per process: loading the CA certificates costs tens of milliseconds per client."""
    return httpx.create_ssl_context()


class _Stale(Exception):
    """EOF (or a reset) before the response started on a reused connection."""


class PlainHTTPTransport(httpx.AsyncBaseTransport):
    """Keep-alive HTTP/1.1 over asyncio streams (``http://`` only).

    ``max_idle_per_host`` caps the idle connections kept per ``(host, port)``; the number of
    connections in use is not capped (callers bound their concurrency themselves).
    """

    def __init__(self, *, max_idle_per_host: int = 32) -> None:
        self._idle: dict[_Key, list[_Conn]] = {}
        self._max_idle = max_idle_per_host
        self._closed = False
        #: netloc -> (connection key, Host header): each ``SplitResult`` property parses the
        #: netloc again, and callers send many requests to a few hosts.
        self._authorities: dict[str, tuple[_Key, str]] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme != "http":
            raise httpx.UnsupportedProtocol(
                f"PlainHTTPTransport speaks plain http only, not {request.url.scheme}"
            )
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        body = await request.aread()
        status, headers, stream = await self._open(
            (request.url.host, request.url.port or 80),
            request_head(request, body) + body,
            request.method,
            timeouts.get("connect"),
            timeouts.get("read"),
        )
        return httpx.Response(
            status, headers=headers, stream=stream, extensions={"http_version": b"HTTP/1.1"}
        )

    async def request(
        self,
        method: str,
        url: SplitResult,
        headers: dict[str, str],
        body: bytes,
        timeout_sec: float | None,
        *,
        connect_timeout_sec: float | None = None,
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """Send one request and read the whole response: ``(status, headers, content)``, header
        names lower-cased. ``url`` is an ``http`` URL from ``urlsplit`` (its path and query are
        sent as they are, %-escapes included; other unsafe characters are %-encoded);
        ``timeout_sec`` is the read timeout, and the connect timeout unless
        ``connect_timeout_sec`` is given. Redirects are never followed. Raises the same httpx
        exceptions as the client path."""
        key, authority = self._authority(url)
        target = quoted_target(url.path or "/") + (
            "?" + quoted_target(url.query) if url.query else ""
        )
        head = [f"{method} {target} HTTP/1.1\r\nhost: {authority}\r\n"]
        for name, value in headers.items():
            head.append(f"{name}: {value}\r\n")
        if body or method in ("POST", "PUT", "PATCH"):
            head.append(f"content-length: {len(body)}\r\n")
        head.append("\r\n")
        payload = "".join(head).encode("latin-1") + body
        status, response_headers, stream = await self._open(
            key,
            payload,
            method,
            timeout_sec if connect_timeout_sec is None else connect_timeout_sec,
            timeout_sec,
        )
        return status, response_headers, await stream.read_all()

    def _authority(self, url: SplitResult) -> tuple[_Key, str]:
        """``((host, port), Host header)`` of ``url``, parsed once per netloc."""
        known = self._authorities.get(url.netloc)
        if known is None:
            host = url.hostname or ""
            port = url.port
            authority = f"[{host}]" if ":" in host else host
            if port:
                authority = f"{authority}:{port}"
            if len(self._authorities) >= _MAX_AUTHORITIES:
                self._authorities.clear()
            known = self._authorities[url.netloc] = ((host, port or 80), authority)
        return known

    async def _open(
        self,
        key: _Key,
        payload: bytes,
        method: str,
        connect_timeout: float | None,
        read_timeout: float | None,
    ) -> tuple[int, list[tuple[bytes, bytes]], _BodyStream]:
        """Send ``payload`` (a complete request) and read the response head; the body is left
        on the connection for the returned stream, which releases the connection when done."""
        for attempt in (1, 2):
            conn, reused = await self._connection(key, connect_timeout, fresh=attempt == 2)
            try:
                head = await _send(conn, payload, read_timeout, reused)
            except _Stale:
                _close(conn)
                continue  # only a reused connection goes stale; the retry opens a fresh one
            try:
                status, headers, length, chunked, keep_alive = parse_head(head, method)
            except httpx.RemoteProtocolError:
                _close(conn)
                raise
            stream = _BodyStream(self, conn, key, length, chunked, keep_alive, read_timeout)
            if length == 0:
                stream.finish()
            return status, headers, stream
        raise AssertionError("unreachable")  # pragma: no cover

    async def _connection(
        self, key: _Key, connect_timeout: float | None, *, fresh: bool
    ) -> tuple[_Conn, bool]:
        idle = None if fresh else self._idle.get(key)
        while idle:
            conn = idle.pop()
            if not conn[0].at_eof() and not conn[1].is_closing():
                return conn, True
            _close(conn)
        try:
            async with asyncio.timeout(connect_timeout):
                return await _open_connection(key[0], key[1]), False
        except TimeoutError:
            raise httpx.ConnectTimeout(f"connecting to {key[0]}:{key[1]} timed out") from None
        except OSError as exc:
            raise httpx.ConnectError(f"cannot connect to {key[0]}:{key[1]}: {exc}") from exc

    def _release(self, key: _Key, conn: _Conn) -> None:
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


async def _open_connection(host: str, port: int) -> _Conn:
    """``asyncio.open_connection`` with a :class:`_Reader` (same limit, protocol, writer)."""
    loop = asyncio.get_running_loop()
    reader = _Reader(limit=_MAX_HEAD, loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    transport, _ = await loop.create_connection(lambda: protocol, host, port)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


_UNBOUNDED = contextlib.nullcontext()


def _deadline(timeout: float | None) -> asyncio.Timeout | contextlib.nullcontext[None]:
    """``asyncio.timeout(timeout)``, or a shared no-op scope for ``None`` (the callback
    sender's case: its own deadline bounds the whole exchange), which spares a ``Timeout`` and
    a task lookup per request."""
    return _UNBOUNDED if timeout is None else asyncio.timeout(timeout)


async def _send(conn: _Conn, payload: bytes, read_timeout: float | None, reused: bool) -> bytes:
    """Write the request and read the response head (status line and headers)."""
    reader, writer = conn
    try:
        writer.write(payload)
        async with _deadline(read_timeout):
            await writer.drain()
            return await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if reused and not exc.partial:
            raise _Stale from None
        _close(conn)
        raise httpx.RemoteProtocolError(
            "the server closed the connection without a complete response head"
        ) from exc
    except TimeoutError:
        _close(conn)
        raise httpx.ReadTimeout("timed out waiting for the response") from None
    except OSError as exc:
        if reused:
            raise _Stale from None
        _close(conn)
        raise httpx.ReadError(f"connection failed: {exc}") from exc
    except asyncio.LimitOverrunError as exc:
        _close(conn)
        raise httpx.RemoteProtocolError("response head too large") from exc
    except BaseException:  # cancelled mid-exchange: the connection's state is unknown
        _close(conn)
        raise


class _BodyStream(httpx.AsyncByteStream):
    """The response body, read from the connection as the caller iterates."""

    def __init__(
        self,
        transport: PlainHTTPTransport,
        conn: _Conn,
        key: _Key,
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

    async def read_all(self) -> bytes:
        """The whole body; the ``Content-Length`` case skips the generator (``post``'s path)."""
        conn = self._conn
        if conn is None:
            return b""
        if self._chunked or self._length is None:
            return b"".join([piece async for piece in self])
        reader = conn[0]
        try:
            if reader.buffered() >= self._length:  # all there: no wait to bound
                data = await reader.readexactly(self._length)
            else:
                async with _deadline(self._timeout):
                    data = await reader.readexactly(self._length)
        except BaseException as exc:  # the connection is in an unknown state
            self._abandon(exc)
            raise
        self.finish()
        return data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._conn is None:
            return
        reader = self._conn[0]
        timeout = self._timeout  # per read, as in httpx: the time allowed between bytes
        try:
            if self._chunked:
                while True:
                    async with asyncio.timeout(timeout):
                        piece = await next_chunk(reader)
                    if piece is None:
                        break
                    yield piece
            elif self._length is not None:
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
        except BaseException as exc:  # the connection is in an unknown state
            self._abandon(exc)
            raise
        self.finish()

    def _abandon(self, exc: BaseException) -> None:
        """A read failed: close the connection and raise ``exc`` as httpx would, if it has an
        httpx equivalent (the caller re-raises anything else)."""
        self.aclose_now()
        error = _body_error(exc)
        if error is not None:
            raise error from exc

    def aclose_now(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            _close(conn)

    async def aclose(self) -> None:
        # Closed before the body was fully read: the connection is in an unknown state.
        self.aclose_now()


def _body_error(exc: BaseException) -> httpx.TransportError | None:
    """The httpx exception for a failure while reading a body, or ``None`` for those that
    pass unchanged (cancellation, a closed generator, a malformed chunk's httpx error)."""
    if isinstance(exc, asyncio.IncompleteReadError | asyncio.LimitOverrunError):
        return httpx.RemoteProtocolError("connection closed in the middle of the body")
    if isinstance(exc, TimeoutError):
        return httpx.ReadTimeout("timed out reading the response body")
    if isinstance(exc, OSError):
        return httpx.ReadError(f"connection failed while reading the body: {exc}")
    return None


def _close(conn: _Conn) -> None:
    with contextlib.suppress(Exception):
        conn[1].close()
