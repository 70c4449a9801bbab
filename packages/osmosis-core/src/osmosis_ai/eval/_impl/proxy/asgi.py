"""The policy proxy's own ASGI pieces: a quiet uvicorn server, its bearer tokens, error replies
(request/response helpers and the bearer rule: :mod:`osmosis_ai._util.asgi`)."""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
from typing import Any

from osmosis_ai._util.asgi import Scope, Send, bearer_token, send_json

__all__ = ["QuietServer", "Scope", "bearer", "route_token", "send_error"]


class QuietServer:
    """uvicorn server that leaves signal handling to the eval command."""

    def __init__(self, app: Any) -> None:
        from osmosis_ai._util.serving import uvicorn_config, uvicorn_server

        config = uvicorn_config(
            app,
            quiet=True,
            lifespan="off",
            # No X-Forwarded-* rewriting: the app reads neither the client address nor the
            # scheme, and the middleware would wrap every request.
            proxy_headers=False,
            timeout_graceful_shutdown=2,
            timeout_keep_alive=120,
        )
        self.server = uvicorn_server(config, capture_signals=False)


def bearer(scope: Scope) -> str | None:
    """The request's bearer token, or ``None`` when it sends none (the one rule:
    :func:`osmosis_ai._util.asgi.bearer_token`)."""
    token = bearer_token(scope)
    return None if token is None else token.decode("latin-1")


def route_token(key: bytes, rollout_id: str, generation: int) -> str:
    """A rollout's bearer token when the proxy runs in its own process: ``<generation>.<mac>``,
    an HMAC-SHA256 of the rollout id and generation under the session's key. The proxy checks it
    without being told about the route first; a re-dispatch takes the next generation, and the
    proxy refuses the older ones from then on."""
    mac = _keyed_mac(key).copy()  # cheaper than keying a new HMAC per token
    mac.update(f"{rollout_id}/{generation}".encode())
    return f"{generation}.{base64.urlsafe_b64encode(mac.digest()).rstrip(b'=').decode()}"


@functools.lru_cache(maxsize=8)
def _keyed_mac(key: bytes) -> hmac.HMAC:
    """An HMAC-SHA256 keyed with ``key`` and fed nothing: :func:`route_token` copies it."""
    return hmac.new(key, digestmod=hashlib.sha256)


async def send_error(send: Send, status: int, message: str, kind: str) -> None:
    await send_json(send, status, {"error": {"message": message, "type": kind, "code": status}})
