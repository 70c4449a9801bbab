"""Bare-ASGI request and response helpers: the one owner for osmosis's ASGI apps (the rollout
server's fast lane, the eval policy proxy).

* :func:`bearer_token` / :func:`bearer_matches`: the ``Authorization: Bearer <token>`` rule.
  The scheme is case-insensitive (RFC 7235 §2.1: ``bearer``, ``BEARER`` and ``Bearer`` are the
  same scheme), spaces around the token are ignored, and the token itself is compared in
  constant time.
* :func:`read_body`: the whole body, optionally refusing bodies over a byte limit.
* :func:`send_json`: one JSON answer (raw bytes are sent as they are).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = [
    "BodyTooLarge",
    "ClientGone",
    "Message",
    "Receive",
    "Scope",
    "Send",
    "bearer_matches",
    "bearer_token",
    "read_body",
    "send_json",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_JSON_HEADER = (b"content-type", b"application/json")


class BodyTooLarge(Exception):
    """The request body is over the limit (declared or streamed)."""


class ClientGone(Exception):
    """The client disconnected before sending its whole body."""


def bearer_token(scope: Scope) -> bytes | None:
    """The token of the request's ``Authorization: Bearer <token>`` header (scheme matched
    case-insensitively), or ``None`` when it sends no bearer credentials."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = value.partition(b" ")
            if scheme.lower() != b"bearer":
                return None
            token = token.strip(b" \t")
            return token or None
    return None


def bearer_matches(scope: Scope, token: bytes | str) -> bool:
    """The request carries ``Bearer <token>``: scheme case-insensitive, constant-time compare."""
    given = bearer_token(scope)
    if given is None:
        return False
    expected = token.encode() if isinstance(token, str) else token
    return hmac.compare_digest(given, expected)


async def read_body(
    receive: Receive, *, scope: Scope | None = None, limit: int | None = None
) -> bytes:
    """The whole request body. With ``limit``: :class:`BodyTooLarge` when the declared
    ``content-length`` (read from ``scope``) or the bytes received exceed it. A disconnect before
    the end raises :class:`ClientGone`."""
    if limit is not None and scope is not None:
        for name, value in scope["headers"]:
            if name == b"content-length":
                if value.isdigit() and int(value) > limit:
                    raise BodyTooLarge
                break
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if limit is not None and size > limit:
                raise BodyTooLarge
            chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def send_json(
    send: Send, status: int, body: Any, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    """Answer ``status`` with ``body`` (``bytes`` as they are, anything else JSON-encoded) and
    the ``extra`` headers."""
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    headers = [_JSON_HEADER, (b"content-length", str(len(body)).encode())]
    if extra:
        headers.extend(extra)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
