"""A lean plain-HTTP/1.1 transport for the callback client.

Why: a 0.3.0 rollout costs the server two outbound POSTs (completion and grader). Through
httpx's default transport (httpcore over anyio) each costs over a millisecond of CPU, mostly
connection-pool bookkeeping and tracing, several times the rest of the rollout's server cost.
This transport keeps the httpx API and exception types (the retry logic in
:mod:`.callbacks` is unchanged) and speaks HTTP/1.1 directly on asyncio streams: keep-alive
connections per host, ``Content-Length``, chunked and read-to-close bodies.

Scope: ``http://`` only (the callback client mounts httpx's default transport for
``https://``), no proxies, no HTTP/2. A request on a reused connection that sees EOF before any
response byte is retried once on a fresh connection: the peer closed the idle connection.
"""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import SplitResult, quote

import httpx

_Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]
_MAX_LINE = 64 * 1024
_NO_BODY = frozenset({204, 304})
# Characters kept as they are when a callback URL's path and query are put on the wire
# (reserved characters and existing %-escapes stay; anything else is %-encoded).
_SAFE = "/:@!$&'()*+,;=-._~%?"


class _Stale(Exception):
    """EOF before the response started."""


class PlainHTTPTransport(httpx.AsyncBaseTransport):
    """Keep-alive HTTP/1.1 over asyncio streams, for ``http://`` URLs."""

    def __init__(self, *, max_idle_per_host: int = 32) -> None:
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._max_idle = max_idle_per_host

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme != "http":
            raise httpx.UnsupportedProtocol(
                f"PlainHTTPTransport serves http only, not {url.scheme}"
            )
        timeouts = request.extensions.get("timeout", {})
        data = _head(request) + await request.aread()
        status, headers, content = await self.roundtrip(
            (url.host, url.port or 80),
            data,
            request.method,
            timeouts.get("connect"),
            timeouts.get("read"),
        )
        return httpx.Response(status, headers=headers, content=content, request=request)

    async def post(
        self,
        url: SplitResult,
        headers: dict[str, str],
        body: bytes,
        timeout_sec: float | None,
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """POST without building httpx request objects (URL parsing and header models cost
        more than the exchange itself); ``url`` is an ``http`` URL from ``urlsplit``."""
        host = url.hostname or ""
        port = url.port or 80
        authority = f"[{host}]" if ":" in host else host
        if url.port:
            authority = f"{authority}:{url.port}"
        target = quote(url.path or "/", safe=_SAFE) + (
            "?" + quote(url.query, safe=_SAFE) if url.query else ""
        )
        lines = [f"POST {target} HTTP/1.1", f"host: {authority}"]
        lines.extend(f"{name}: {value}" for name, value in headers.items())
        lines.append(f"content-length: {len(body)}")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        return await self.roundtrip((host, port), data, "POST", timeout_sec, timeout_sec)

    async def roundtrip(
        self,
        key: tuple[str, int],
        data: bytes,
        method: str,
        connect_timeout: float | None,
        read_timeout: float | None,
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """Send ``data`` (a complete request) and read the response, reusing connections."""
        for attempt in (1, 2):
            connection, reused = await self._connection(key, connect_timeout)
            try:
                async with asyncio.timeout(read_timeout):
                    status, headers, content, keep = await _exchange(connection, data, method)
            except _Stale:
                _close(connection)
                if reused and attempt == 1:
                    continue
                raise httpx.RemoteProtocolError(
                    "the server closed the connection without a response"
                ) from None
            except TimeoutError:
                _close(connection)
                raise httpx.ReadTimeout("timed out waiting for the response") from None
            except (
                OSError,
                asyncio.IncompleteReadError,
                asyncio.LimitOverrunError,
                ValueError,
            ) as exc:
                _close(connection)
                raise httpx.ReadError(f"{type(exc).__name__}: {exc}") from exc
            if keep:
                self._release(key, connection)
            else:
                _close(connection)
            return status, headers, content
        raise AssertionError("unreachable")  # pragma: no cover

    async def _connection(
        self, key: tuple[str, int], connect_timeout: float | None
    ) -> tuple[_Connection, bool]:
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()
            if not connection[1].is_closing() and not connection[0].at_eof():
                return connection, True
            _close(connection)
        try:
            async with asyncio.timeout(connect_timeout):
                connection = await asyncio.open_connection(key[0], key[1], limit=_MAX_LINE)
        except TimeoutError:
            raise httpx.ConnectTimeout("timed out connecting") from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        return connection, False

    def _release(self, key: tuple[str, int], connection: _Connection) -> None:
        idle = self._idle.setdefault(key, [])
        if len(idle) < self._max_idle:
            idle.append(connection)
        else:
            _close(connection)

    async def aclose(self) -> None:
        for connections in self._idle.values():
            for connection in connections:
                _close(connection)
        self._idle.clear()


def _head(request: httpx.Request) -> bytes:
    lines = [f"{request.method} ".encode() + request.url.raw_path + b" HTTP/1.1"]
    lines.extend(name + b": " + value for name, value in request.headers.raw)
    return b"\r\n".join(lines) + b"\r\n\r\n"


async def _exchange(
    connection: _Connection, data: bytes, method: str
) -> tuple[int, list[tuple[bytes, bytes]], bytes, bool]:
    reader, writer = connection
    writer.write(data)
    await writer.drain()
    status_line = await reader.readline()
    if not status_line:
        raise _Stale
    parts = status_line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
        raise ValueError(f"malformed status line {status_line[:80]!r}")
    status = int(parts[1])
    keep = parts[0] == b"HTTP/1.1"
    headers: list[tuple[bytes, bytes]] = []
    length: int | None = None
    chunked = False
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n"):
            break
        if not line:
            raise asyncio.IncompleteReadError(b"", None)
        name, _, value = line.partition(b":")
        name, value = name.strip().lower(), value.strip()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
            continue  # the body handed to httpx is already de-chunked
        elif name == b"connection":
            keep = keep and value.lower() != b"close"
        headers.append((name, value))
    if status in _NO_BODY or 100 <= status < 200 or method == "HEAD":
        return status, headers, b"", keep
    if chunked:
        body = bytearray()
        while True:
            size = int((await reader.readline()).split(b";", 1)[0].strip(), 16)
            if size == 0:
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                break
            body += await reader.readexactly(size)
            await reader.readexactly(2)
        return status, headers, bytes(body), keep
    if length is not None:
        return status, headers, await reader.readexactly(length), keep
    return status, headers, await reader.read(), False  # delimited by close


def _close(connection: _Connection) -> None:
    with contextlib.suppress(Exception):
        connection[1].close()
