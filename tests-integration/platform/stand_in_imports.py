"""The stand-in platform's import of local eval runs (``eval upload``, ``eval run --upload``):
open or resume an import, one ``PUT`` per file (checked against the declared size and sha256),
finalize into a platform eval run (``docs/platform-api.md``, "Local eval imports")."""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import unquote

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from stand_in_files import error
from stand_in_state import PlatformState, now

_STATUS = {"success": "succeeded", "partial": "failed", "failed": "failed"}


def add_import_routes(app: FastAPI, state: PlatformState) -> None:
    def view(session: dict[str, Any]) -> dict[str, Any]:
        files = [{**f, "path": p} for p, f in session["files"].items()]
        return {
            "session_id": session["id"],
            "status": session["status"],
            "files": files,
            "expected_files": len(files),
            "uploaded_files": sum(f["state"] == "uploaded" for f in files),
        }

    @app.post("/api/cli/eval-runs/imports")
    async def start(request: Request) -> Any:
        body = await request.json()
        local_id, digest = body.get("local_run_id"), body.get("manifest_digest")
        if not isinstance(local_id, str) or not isinstance(digest, str):
            return error(422, "invalid_body", "local_run_id and manifest_digest are required")
        done = state.imported.get(local_id)
        if done is not None and not body.get("replace"):
            return error(409, "already_imported", f"this local run is already {done['name']}")
        key = (local_id, digest)
        session = state.imports.get(key)
        if session is None or session["status"] == "finalized":
            session = {
                "id": f"imp_{state.next_id():04d}",
                "status": "uploading",
                "run": body.get("run") or {},
                "local_run_id": local_id,
                "files": {
                    f["path"]: {"size": f["size"], "sha256": f["sha256"], "state": "pending"}
                    for f in body.get("files") or []
                },
            }
            state.imports[key] = session
        return JSONResponse(view(session), status_code=201)

    def find(session_id: str) -> dict[str, Any] | None:
        return next((s for s in state.imports.values() if s["id"] == session_id), None)

    @app.put("/api/cli/eval-runs/imports/{session_id}/files/{path:path}")
    async def put_file(session_id: str, path: str, request: Request) -> Any:
        session = find(session_id)
        path = unquote(path)
        if session is None or path not in session["files"]:
            return error(404, "file_not_found", f"no file {path!r} in import {session_id}")
        digest, size = hashlib.sha256(), 0
        async for chunk in request.stream():
            digest.update(chunk)
            size += len(chunk)
        declared = session["files"][path]
        if (size, digest.hexdigest()) != (declared["size"], declared["sha256"]):
            return error(422, "checksum_mismatch", f"{path} differs from what was declared")
        declared["state"] = "uploaded"
        return {"path": path, "size": size, "sha256": digest.hexdigest()}

    @app.post("/api/cli/eval-runs/imports/{session_id}/finalize")
    async def finalize(session_id: str, request: Request) -> Any:
        session = find(session_id)
        if session is None:
            return error(404, "import_not_found", f"no import {session_id}")
        pending = [p for p, f in session["files"].items() if f["state"] != "uploaded"]
        if pending:
            return error(409, "files_missing", f"{len(pending)} file(s) not uploaded yet")
        summary = session["run"]
        run = state.add_run("eval", f"{summary.get('name')}-imported", status="succeeded")
        run.update(
            status=_STATUS.get(str(summary.get("status")), "succeeded"),
            model_name=summary.get("model"),
            rollout=summary.get("rollout"),
            metrics={
                "pass_rate": summary.get("pass_rate"),
                "mean_reward": summary.get("mean_reward"),
            },
            source="local",
            updated_at=now(),
        )
        session["status"] = "finalized"
        state.imported[session["local_run_id"]] = run
        base = str(request.base_url).rstrip("/")
        return {
            **view(session),
            "eval_run_id": run["id"],
            "eval_run_name": run["name"],
            "url": f"{base}/runs/{run['id']}",
        }
