"""The rollout server's OpenAPI document, complete with request bodies and error answers.

The hot routes read their bodies straight from the ASGI stream (see :mod:`.fastpath`), so
FastAPI cannot see what they accept; this module describes it: the request models'
JSON Schemas, the lease header of the result route, and every status code a route answers.
The document is built on the first ``GET /openapi.json`` (nothing at import or start-up), and it
is what the fuzz tests (schemathesis) generate requests from.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from osmosis_ai.rollout.types.protocol import (
    POLLING_LEASE_HEADER,
    CancelRolloutsRequest,
    RolloutInitRequest,
)

_REF = "#/components/schemas/{model}"
_ERROR = {
    "description": "An error: ``detail`` says what is wrong",
    "content": {"application/json": {"schema": {"type": "object"}}},
}
_ANSWERS: dict[tuple[str, str], dict[str, str]] = {
    ("post", "/rollout"): {
        "401": "missing or wrong bearer token (when the server requires one)",
        "409": "the rollout id is taken by a different request",
        "413": "the body is larger than max_body_bytes",
        "422": "the body is not a valid RolloutInitRequest",
        "429": "the server is at capacity (Retry-After)",
        "503": "the server is draining (Retry-After)",
    },
    ("get", "/rollout/{rollout_id}/result"): {
        "401": "missing or wrong bearer token",
        "403": "the lease token does not match",
        "404": "no such rollout",
        "422": "the lease header is missing or empty",
    },
    ("post", "/rollout/cancel"): {
        "401": "missing or wrong bearer token",
        "413": "the body is larger than max_body_bytes",
        "422": "the body is not a valid CancelRolloutsRequest",
    },
    ("get", "/rollout/{rollout_id}/status"): {"401": "missing or wrong bearer token"},
    ("get", "/health"): {"401": "missing or wrong bearer token"},
}
_BODIES: dict[tuple[str, str], type[BaseModel]] = {
    ("post", "/rollout"): RolloutInitRequest,
    ("post", "/rollout/cancel"): CancelRolloutsRequest,
}


def install_openapi(app: FastAPI) -> None:
    """Make ``app.openapi()`` return the complete document (built once, on first use)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title,
                version=app.version,
                openapi_version=app.openapi_version,
                description=app.description,
                routes=app.routes,
            )
            _describe(document)
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _describe(document: dict[str, Any]) -> None:
    schemas: dict[str, Any] = document.setdefault("components", {}).setdefault("schemas", {})
    for (method, path), answers in _ANSWERS.items():
        operation = document["paths"].get(path, {}).get(method)
        if operation is None:
            continue
        responses: dict[str, Any] = operation.setdefault("responses", {})
        for code, why in answers.items():
            responses.setdefault(code, {**_ERROR, "description": why})
        model = _BODIES.get((method, path))
        if model is not None:
            operation["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": _schema(model, schemas)}},
            }
    result = document["paths"].get("/rollout/{rollout_id}/result", {}).get("get")
    if result is not None:
        result.setdefault("parameters", []).append(
            {
                "name": POLLING_LEASE_HEADER,
                "in": "header",
                "required": True,
                "description": "the polling_lease_token of the 202 answer",
                "schema": {"type": "string"},
            }
        )


def _schema(model: type[BaseModel], schemas: dict[str, Any]) -> dict[str, Any]:
    """``model``'s validation schema as a reference into ``components.schemas``."""
    schema = model.model_json_schema(ref_template=_REF, mode="validation")
    for name, definition in schema.pop("$defs", {}).items():
        schemas.setdefault(name, definition)
    schemas[model.__name__] = schema
    return {"$ref": _REF.format(model=model.__name__)}
