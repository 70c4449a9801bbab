"""A stand-in osmosis platform implementing ``docs/platform-api.md``, for tests.

In memory, FastAPI, bound to 127.0.0.1 by the fixtures. It checks what a real platform would
(bearer token, body shape, secrets provided for every required name) and records every request
so tests can assert on exactly what the CLI sent.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

RUN_KINDS = {"eval-runs": "eval", "training-runs": "training"}
REQUIRED_SECTIONS = {
    "eval": ("experiment_config", "evaluation_config"),
    "training": ("experiment_config", "training_config"),
}
EXPERIMENT_KEYS = ("rollout", "entrypoint", "model_path", "dataset")


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class PlatformState:
    """Users by token, submitted runs, and the request log."""

    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: dict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: {"eval": [], "training": []}
    )
    requests: list[RecordedRequest] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def add_user(self, token: str, email: str) -> None:
        self.users[token] = {"id": f"u_{len(self.users) + 1}", "email": email, "name": None}


def _error(status: int, code: str, message: str, field_name: str | None = None) -> JSONResponse:
    error: dict[str, Any] = {"code": code, "message": message}
    if field_name:
        error["field"] = field_name
    return JSONResponse({"error": error}, status_code=status)


def create_app(state: PlatformState) -> FastAPI:
    app = FastAPI(title="osmosis platform stand-in")

    @app.middleware("http")
    async def record_and_authenticate(request: Request, call_next: Any) -> Any:
        raw = await request.body()
        try:
            import json

            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        state.requests.append(
            RecordedRequest(request.method, request.url.path, dict(request.headers), body)
        )
        header = request.headers.get("authorization", "")
        token = header.removeprefix("Bearer ") if header.startswith("Bearer ") else ""
        if token not in state.users:
            return _error(401, "unauthorized", "invalid or expired token")
        request.state.user = state.users[token]
        return await call_next(request)

    @app.get("/api/cli/whoami")
    async def whoami(request: Request) -> dict[str, Any]:
        return {
            "user": request.state.user,
            "workspace": {"id": "w_1", "name": "stand-in"},
            "token": {"expires_at": None},
        }

    @app.post("/api/cli/{collection}")
    async def submit(collection: str, request: Request) -> Any:
        kind = RUN_KINDS.get(collection)
        if kind is None:
            return _error(404, "not_found", f"no collection {collection}")
        body = await request.json()
        for section in REQUIRED_SECTIONS[kind]:
            if not isinstance(body.get(section), dict):
                return _error(422, "invalid_body", f"{section} is required", section)
        for key in EXPERIMENT_KEYS:
            if not isinstance(body["experiment_config"].get(key), str):
                return _error(422, "invalid_body", f"{key} is required", f"experiment_config.{key}")
        secrets = body.get("secrets") or {}
        provided = secrets.get("provided") or {}
        missing = [n for n in secrets.get("required", []) if not provided.get(n)]
        if missing:
            return _error(
                422, "missing_secrets", f"missing secret values: {', '.join(missing)}", "secrets"
            )
        number = next(state._ids)
        now = datetime.now(UTC).isoformat()
        run = {
            "id": f"run_{number:04d}",
            "name": body.get("name") or f"{body['experiment_config']['rollout']}-{number}",
            "kind": kind,
            "status": "queued",
            "model_name": body["experiment_config"]["model_path"],
            "dataset_name": body["experiment_config"]["dataset"],
            "rollout": body["experiment_config"]["rollout"],
            "created_at": now,
            "updated_at": now,
            "url": f"{request.base_url}runs/run_{number:04d}",
            "metrics": None,
        }
        if any(r["name"] == run["name"] for r in state.runs[kind]):
            return _error(409, "name_taken", f"a run named {run['name']} exists", "name")
        state.runs[kind].append(run)
        return JSONResponse(run, status_code=201)

    @app.get("/api/cli/{collection}")
    async def list_runs(collection: str, limit: int = 50, offset: int = 0) -> Any:
        kind = RUN_KINDS.get(collection)
        if kind is None:
            return _error(404, "not_found", f"no collection {collection}")
        if not 1 <= limit <= 200 or offset < 0:
            return _error(400, "invalid_query", "limit must be 1..200 and offset >= 0", "limit")
        newest = list(reversed(state.runs[kind]))
        page = newest[offset : offset + limit]
        has_more = offset + limit < len(newest)
        return {
            "items": page,
            "total_count": len(newest),
            "has_more": has_more,
            "next_offset": offset + limit if has_more else None,
        }

    @app.get("/api/cli/{collection}/{run}")
    async def get_run(collection: str, run: str) -> Any:
        kind = RUN_KINDS.get(collection)
        if kind is None:
            return _error(404, "not_found", f"no collection {collection}")
        for item in state.runs[kind]:
            if run in (item["id"], item["name"]):
                return item
        return _error(404, "run_not_found", f"no {kind} run {run!r}")

    return app
