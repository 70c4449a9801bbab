"""Inbound bearer authentication for every route of the rollout server.

The check is a header lookup and a constant-time compare, done by the app before routing (see
``RolloutServerApp.__call__``), so an unauthenticated caller learns nothing, not even whether
its body is valid, and it costs no middleware layer.
"""

from __future__ import annotations

import os
from typing import Any

from starlette.types import Send

from osmosis_ai._util.asgi import bearer_matches

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


def expected_authorization(api_key: str) -> bytes:
    """The bearer token that is accepted (``Authorization: Bearer <it>``)."""
    return api_key.encode("utf-8")


#: ``Authorization: Bearer <expected>``: the one bearer rule (:mod:`osmosis_ai._util.asgi`),
#: scheme case-insensitive (RFC 7235), token compared in constant time.
is_authorized = bearer_matches


async def send_unauthorized(send: Send) -> None:
    start: dict[str, Any] = {
        "type": "http.response.start",
        "status": 401,
        "headers": _UNAUTHORIZED_HEADERS,
    }
    await send(start)
    await send({"type": "http.response.body", "body": _UNAUTHORIZED_BODY})
