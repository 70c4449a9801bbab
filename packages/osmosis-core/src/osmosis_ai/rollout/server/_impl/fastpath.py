"""Raw ASGI handlers for the two hot routes: ``POST /rollout`` and ``GET /rollout/{id}/result``.

Every rollout costs one admission and usually one poll, so these two requests are the server's
per-rollout HTTP cost. Going through FastAPI and Starlette means about eight middleware and
routing layers (error handling, telemetry, body limit, exception handlers, exit stacks,
dependency solving) that these handlers do not need: they read the raw body, validate it with
the request model's compiled validator, and answer with pre-encoded JSON bytes. Answers are
byte-for-byte those of the documented routes in :mod:`..app` (which remain for OpenAPI).
"""

from __future__ import annotations

import logging
import math
from typing import Any

from pydantic import ValidationError
from starlette.types import Receive, Scope, Send

from osmosis_ai._util.asgi import BodyTooLarge, ClientGone, read_body, send_json
from osmosis_ai._util.redaction import mask_url
from osmosis_ai.rollout.server._impl import wire
from osmosis_ai.rollout.server._impl.service import AdmissionError, RolloutService
from osmosis_ai.rollout.server._impl.settings import RETRY_AFTER_SEC
from osmosis_ai.rollout.types.protocol import POLLING_LEASE_HEADER, RolloutInitRequest

logger = logging.getLogger("osmosis_ai.rollout.server")

_LEASE_HEADER = POLLING_LEASE_HEADER.lower().encode()
_RETRY_AFTER: tuple[bytes, bytes] = (b"retry-after", str(RETRY_AFTER_SEC).encode())
_RESULT_PREFIX = "/rollout/"
_RESULT_SUFFIX = "/result"

NOT_FOUND_BODY = b'{"detail":"unknown rollout_id"}'
FORBIDDEN_BODY = b'{"detail":"invalid polling lease"}'
LEASE_MISSING_BODY = wire.encode_json(
    {
        "detail": [
            {
                "type": "missing",
                "loc": ["header", POLLING_LEASE_HEADER.lower()],
                "msg": "Field required",
                "input": None,
            }
        ]
    }
)
LEASE_EMPTY_BODY = wire.encode_json(
    {
        "detail": [
            {
                "type": "string_too_short",
                "loc": ["header", POLLING_LEASE_HEADER.lower()],
                "msg": "String should have at least 1 character",
                "input": "",
                "ctx": {"min_length": 1},
            }
        ]
    }
)


def validation_body(exc: ValidationError) -> bytes:
    """The 422 body for ``exc`` (FastAPI's shape), as strict JSON.

    The echoed ``input`` values are made safe for any JSON parser and for sharing: non-finite
    numbers (a request may carry the ``NaN`` literal, which Python's parser accepts) become the
    strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``, and the credentials and query of an
    echoed ``*_url`` value are masked. Secret fields are never echoed (``wire``).
    """
    details = wire.validation_errors(exc)
    for detail in details:
        loc = detail.get("loc") or []
        value = detail.get("input")
        if isinstance(value, str) and loc and str(loc[-1]).endswith("_url"):
            detail["input"] = mask_url(value)
        else:
            detail["input"] = _strict(value)
        if "ctx" in detail:
            detail["ctx"] = _strict(detail["ctx"])
    return wire.encode_json({"detail": details})


def _strict(value: Any) -> Any:
    """``value`` with every non-finite float replaced by its JSON-ish spelling as a string."""
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {str(k): _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return value


def too_large_body(limit: int) -> bytes:
    return wire.encode_json(
        {
            "detail": f"request body exceeds the {limit}-byte limit; send a smaller body "
            "or raise max_body_bytes of create_rollout_server"
        }
    )


def result_route_id(path: str) -> str | None:
    """The rollout id of a ``/rollout/{id}/result`` path, or ``None``."""
    if path.startswith(_RESULT_PREFIX) and path.endswith(_RESULT_SUFFIX):
        rollout_id = path[len(_RESULT_PREFIX) : -len(_RESULT_SUFFIX)]
        if rollout_id and "/" not in rollout_id:
            return rollout_id
    return None


class FastRoutes:
    """The hot routes of one server."""

    def __init__(self, service: RolloutService, max_body_bytes: int) -> None:
        self.service = service
        self.limit = max_body_bytes
        self._too_large = too_large_body(max_body_bytes)

    async def post_rollout(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            body = await read_body(receive, scope=scope, limit=self.limit)
        except BodyTooLarge:
            await send_json(send, 413, self._too_large)
            return
        except ClientGone:
            return
        try:
            request = RolloutInitRequest.model_validate_json(body)
        except ValidationError as exc:
            await send_json(send, 422, validation_body(exc))
            return
        try:
            payload, written = self.service.admit_batched(request, body)
        except AdmissionError as exc:
            extra = [_RETRY_AFTER] if exc.status_code in (429, 503) else None
            await send_json(send, exc.status_code, wire.encode_json({"detail": exc.detail}), extra)
            return
        if written is not None:
            await written  # the admission is on file (the turn's journal write) before the 202
        await send_json(send, 202, payload)

    async def get_result(self, scope: Scope, send: Send, rollout_id: str) -> None:
        token: bytes | None = None
        for name, value in scope["headers"]:
            if name == _LEASE_HEADER:
                token = value
                break
        if token is None:
            await send_json(send, 422, LEASE_MISSING_BODY)
            return
        if not token:
            await send_json(send, 422, LEASE_EMPTY_BODY)
            return
        service = self.service
        entry = service.entries.get(rollout_id)
        if entry is None:
            await send_json(send, 404, NOT_FOUND_BODY)
            return
        if not service.lease_ok(entry, token.decode("latin-1")):
            await send_json(send, 403, FORBIDDEN_BODY)
            return
        await send_json(send, 200, await service.poll(entry))
