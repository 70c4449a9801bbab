"""A stand-in osmosis platform implementing ``docs/platform-api.md``, for tests.

FastAPI, bound to 127.0.0.1 by the fixtures, state in :mod:`stand_in_state`. It checks what a
real platform would (bearer token, body shape, secrets provided for every required name, upload
checksums) and records every request so tests can assert on exactly what the CLI sent. Runs and
their logs are here; artifacts, datasets, secrets and rollouts are in :mod:`stand_in_files`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from stand_in_benchmarks import add_benchmark_routes
from stand_in_files import add_file_routes, error
from stand_in_imports import add_import_routes
from stand_in_models import add_model_routes
from stand_in_state import RUN_KINDS, TERMINAL, PlatformState, RecordedRequest, now

REQUIRED_SECTIONS = {
    "eval": ("experiment_config", "evaluation_config"),
    "training": ("experiment_config", "training_config"),
}
EXPERIMENT_KEYS = ("rollout", "entrypoint", "model_path", "dataset")

__all__ = ["PlatformState", "create_app", "error"]


def create_app(state: PlatformState) -> FastAPI:
    app = FastAPI(title="osmosis platform stand-in")

    @app.middleware("http")
    async def record_and_authenticate(request: Request, call_next: Any) -> Any:
        body: Any = None
        if request.headers.get("content-type", "").startswith("application/json"):
            raw = await request.body()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode(errors="replace")
        state.requests.append(
            RecordedRequest(
                request.method,
                request.url.path,
                dict(request.headers),
                body,
                dict(request.query_params),
            )
        )
        if request.url.path.startswith("/api/cli/device/"):  # the sign-in has no token yet
            return await call_next(request)
        header = request.headers.get("authorization", "")
        token = header.removeprefix("Bearer ") if header.startswith("Bearer ") else ""
        if token not in state.users:
            return error(401, "unauthorized", "invalid or expired token")
        fault = state.take_fault(request.method, request.url.path)
        if fault is not None and fault.redirect_to is not None:
            target = fault.redirect_to + request.url.path
            return Response(status_code=307, headers={"Location": target})
        if fault is not None:
            response = error(fault.status, "injected", fault.message, fault.field)
            if fault.retry_after is not None:
                response.headers["Retry-After"] = fault.retry_after
            return response
        request.state.user = state.users[token]
        selected = request.headers.get("x-osmosis-workspace")
        if selected is not None and selected not in state.workspaces:
            return error(404, "workspace_not_found", f"you are not a member of {selected!r}")
        request.state.workspace = state.workspaces[selected or "stand-in"]
        return await call_next(request)

    @app.get("/api/cli/whoami")
    async def whoami(request: Request) -> dict[str, Any]:
        return {
            "user": request.state.user,
            "workspace": request.state.workspace,
            "token": {"expires_at": None},
        }

    add_file_routes(app, state)
    add_device_routes(app, state)
    add_workspace_routes(app, state)
    add_import_routes(app, state)  # before the run routes: /api/cli/{collection}/... is generic
    add_model_routes(app, state)  # before the run routes: /api/cli/{collection}/{run} is generic
    add_benchmark_routes(app, state)  # before the run routes: its submit and list are its own
    _add_run_routes(app, state)
    return app


def add_device_routes(app: FastAPI, state: PlatformState) -> None:
    """The browser sign-in (OAuth 2.0 device authorization grant, RFC 8628)."""

    @app.post("/api/cli/device/authorize")
    async def authorize(request: Request) -> Any:
        number = state.next_id()
        device_code, user_code = f"dc_secret_{number:04d}", f"WDJB-{number:04d}"
        state.device_grants[device_code] = {"user_code": user_code, "status": "pending", "polls": 0}
        base = str(request.base_url).rstrip("/")
        return {
            "device_code": device_code,
            "user_code": user_code,
            "verification_uri": f"{base}/device",
            "verification_uri_complete": f"{base}/device?code={user_code}",
            "expires_in": 600,
            "interval": 0,
        }

    @app.post("/api/cli/device/token")
    async def token(request: Request) -> Any:
        body = await request.json()
        grant = state.device_grants.get(body.get("device_code"))
        if grant is None:
            return error(400, "invalid_grant", "unknown device code")
        grant["polls"] += 1
        state.device_polled.set()
        if grant["status"] == "approved":
            user = state.users[grant["token"]]
            return {"token": grant["token"], "token_id": "tok_1", "expires_at": None, "user": user}
        reason = {"pending": "authorization_pending", "denied": "access_denied"}.get(
            grant["status"], "expired_token"
        )
        return error(400, reason, reason.replace("_", " "))


def add_workspace_routes(app: FastAPI, state: PlatformState) -> None:
    """Workspaces and ``osmosis quickstart``'s setup status."""

    @app.get("/api/cli/workspaces")
    async def workspaces(limit: int = 50, offset: int = 0) -> Any:
        from stand_in_files import page

        return page(list(state.workspaces.values()), limit, offset)

    def find(workspace_id: str) -> dict[str, Any] | None:
        return next((w for w in state.workspaces.values() if w["id"] == workspace_id), None)

    @app.get("/api/cli/quickstart")
    async def quickstart_status(workspace_id: str, request: Request) -> Any:
        found = find(workspace_id)
        if found is None:
            return error(404, "workspace_not_found", f"no workspace {workspace_id!r}")
        base = str(request.base_url).rstrip("/")
        return {
            "repo_connected": bool(found.get("clone_url")),
            "repo_full_name": found.get("repo_full_name"),
            "clone_url": found.get("clone_url"),
            "connect_url": f"{base}/{found['name']}/integrations/git",
            "billing_ready": found.get("billing_ready", True),
            "completed": found.get("quickstart_intent") is not None,
        }

    @app.post("/api/cli/quickstart")
    async def quickstart_done(request: Request) -> Any:
        body = await request.json()
        found = find(str(body.get("workspace_id")))
        if found is None:
            return error(404, "workspace_not_found", "no such workspace")
        found["quickstart_intent"] = body.get("intent")
        return Response(status_code=204)


def _submitted_run(kind: str, body: dict[str, Any], number: int, base: str) -> dict[str, Any]:
    return {
        "id": f"run_{number:04d}",
        "name": body.get("name") or f"{body['experiment_config']['rollout']}-{number}",
        "kind": kind,
        "status": "queued",
        "model_name": body["experiment_config"]["model_path"],
        "dataset_name": body["experiment_config"]["dataset"],
        "rollout": body["experiment_config"]["rollout"],
        "created_at": now(),
        "updated_at": now(),
        "url": f"{base}runs/run_{number:04d}",
        "metrics": None,
    }


def _add_run_routes(app: FastAPI, state: PlatformState) -> None:
    @app.post("/api/cli/{collection}")
    async def submit(collection: str, request: Request) -> Any:
        kind = RUN_KINDS.get(collection)
        if kind is None:
            return error(404, "not_found", f"no collection {collection}")
        body = await request.json()
        for section in REQUIRED_SECTIONS[kind]:
            if not isinstance(body.get(section), dict):
                return error(422, "invalid_body", f"{section} is required", section)
        for key in EXPERIMENT_KEYS:
            if not isinstance(body["experiment_config"].get(key), str):
                return error(422, "invalid_body", f"{key} is required", f"experiment_config.{key}")
        secrets = body.get("secrets") or {}
        provided = secrets.get("provided") or {}
        missing = [n for n in secrets.get("required", []) if not provided.get(n)]
        if missing:
            return error(
                422, "missing_secrets", f"missing secret values: {', '.join(missing)}", "secrets"
            )
        run = _submitted_run(kind, body, state.next_id(), str(request.base_url))
        run["secret_names"] = sorted(provided)  # names only: values are never stored
        if any(r["name"] == run["name"] for r in state.runs[kind]):
            return error(409, "name_taken", f"a run named {run['name']} exists", "name")
        state.runs[kind].append(run)
        state.logs[run["id"]] = []
        return JSONResponse(run, status_code=201)

    @app.get("/api/cli/training-runs/{run}/metrics")
    async def training_metrics(run: str) -> Any:
        found = state.find_run("training", run)
        if found is None or found["id"] not in state.training_metrics:
            return error(404, "metrics_not_found", f"no metrics for training run {run!r}")
        return {"status": found["status"], **state.training_metrics[found["id"]]}

    @app.get("/api/cli/training-runs/{run}/checkpoints")
    async def training_checkpoints(run: str) -> Any:
        found = state.find_run("training", run)
        if found is None:
            return error(404, "run_not_found", f"no training run {run!r}")
        return {
            "training_run_name": found["name"],
            "checkpoints": state.checkpoints.get(found["id"], []),
        }

    @app.post("/api/cli/eval-runs/{run}/retry")
    async def retry(run: str, request: Request) -> Any:
        found = state.find_run("eval", run)
        if found is None:
            return error(404, "run_not_found", f"no eval run {run!r}")
        if found["status"] not in TERMINAL:
            return error(409, "run_not_finished", f"eval run {run!r} is {found['status']}")
        given = (await request.json() or {}).get("secrets") or {}
        missing = [n for n in found.get("secret_names", []) if not given.get(n)]
        if missing:
            return error(422, "missing_secrets", f"missing secret values: {', '.join(missing)}")
        state.retried.append((found["id"], dict(given)))
        failed = found.get("failed_samples", 0)
        state.set_status(found, "queued")
        return {**found, "retryable_samples": failed}

    @app.get("/api/cli/{collection}")
    async def list_runs(collection: str, limit: int = 50, offset: int = 0) -> Any:
        kind = RUN_KINDS.get(collection)
        if kind is None:
            return error(404, "not_found", f"no collection {collection}")
        if not 1 <= limit <= 200 or offset < 0:
            return error(400, "invalid_query", "limit must be 1..200 and offset >= 0", "limit")
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
        found = state.find_run(kind, run) if kind else None
        if found is None:
            return error(404, "run_not_found", f"no run {run!r} in {collection}")
        return found

    @app.post("/api/cli/{collection}/{run}/stop")
    async def stop_run(collection: str, run: str) -> Any:
        kind = RUN_KINDS.get(collection)
        found = state.find_run(kind, run) if kind else None
        if found is None:
            return error(404, "run_not_found", f"no run {run!r} in {collection}")
        if found["status"] in TERMINAL:
            return error(409, "run_finished", f"run {run} already {found['status']}")
        state.set_status(found, "cancelled")
        return found

    @app.get("/api/cli/{collection}/{run}/logs")
    async def logs(
        collection: str, run: str, limit: int = 200, cursor: str | None = None, wait: int = 0
    ) -> Any:
        kind = RUN_KINDS.get(collection)
        found = state.find_run(kind, run) if kind else None
        if found is None:
            return error(404, "run_not_found", f"no run {run!r} in {collection}")
        if not (cursor or "0").isdigit() or not 1 <= limit <= 200 or not 0 <= wait <= 30:
            return error(400, "invalid_query", "bad cursor, limit (1..200) or wait (0..30)")
        start = int(cursor or 0)
        if wait:
            await asyncio.to_thread(state.wait_for_logs, found, start, wait)
        status = found["status"]  # read before the entries: lines come before the end
        entries = list(state.logs.get(found["id"], []))
        page = entries[start : start + limit]
        end = start + len(page)
        has_more = end < len(entries)
        return {
            "items": page,
            "next_cursor": str(end),
            "has_more": has_more,
            "run_status": status,
            "finished": status in TERMINAL and not has_more,
        }
