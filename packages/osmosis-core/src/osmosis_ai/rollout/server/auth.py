"""Inbound bearer authentication for every route of the rollout server.

A pure ASGI middleware (not Starlette's ``BaseHTTPMiddleware``, which costs a task and a
memory stream per request): the check is a header lookup and a constant-time compare, done
before routing, so an unauthenticated caller learns nothing, not even whether its body is valid.
"""

from __future__ import annotations

import hmac
import os
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

ENV_ROLLOUT_API_KEY = "OSMOSIS_ROLLOUT_API_KEY"

_UNAUTHORIZED_BODY = b'{"detail":"unauthorized"}'
_UNAUTHORIZED_HEADERS = [
    (b"content-type", b"application/json"),
    (b"content-length", str(len(_UNAUTHORIZED_BODY)).encode()),
    (b"www-authenticate", b"Bearer"),
]


def resolve_api_key(api_key: str | None) -> str | None:
    """The inbound key: the argument, else ``OSMOSIS_ROLLOUT_API_KEY``, else no auth.

    A blank argument is a configuration mistake and raises; a blank environment variable is
    treated as unset (an exported-but-empty variable is common in shell setups).
    """
    if api_key is not None:
        if not api_key.strip():
            raise ValueError("api_key must be non-empty when provided")
        return api_key
    env = os.environ.get(ENV_ROLLOUT_API_KEY, "")
    return env if env.strip() else None


class BearerAuthMiddleware:
    """Require ``Authorization: Bearer <key>`` exactly (case-sensitive scheme, one space)."""

    def __init__(self, app: ASGIApp, *, api_key: str) -> None:
        self.app = app
        self._expected = b"Bearer " + api_key.encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        presented = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                presented = value
                break
        if hmac.compare_digest(presented, self._expected):
            await self.app(scope, receive, send)
            return
        await _send_unauthorized(send)


async def _send_unauthorized(send: Send) -> None:
    start: dict[str, Any] = {
        "type": "http.response.start",
        "status": 401,
        "headers": _UNAUTHORIZED_HEADERS,
    }
    await send(start)
    await send({"type": "http.response.body", "body": _UNAUTHORIZED_BODY})
