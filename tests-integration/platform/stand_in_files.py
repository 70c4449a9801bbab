"""The stand-in platform's file-shaped endpoints: run artifacts (ranged downloads), dataset
uploads in parts, secrets and synced rollouts (``docs/platform-api.md``)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from stand_in_state import RUN_KINDS, Artifact, PlatformState, now

CHUNK = 64 * 1024


def error(status: int, code: str, message: str, field_name: str | None = None) -> JSONResponse:
    body: dict[str, Any] = {"code": code, "message": message}
    if field_name:
        body["field"] = field_name
    return JSONResponse({"error": body}, status_code=status)


def page(items: list[dict[str, Any]], limit: int, offset: int) -> dict[str, Any]:
    has_more = offset + limit < len(items)
    return {
        "items": items[offset : offset + limit],
        "total_count": len(items),
        "has_more": has_more,
        "next_offset": offset + limit if has_more else None,
    }


def add_file_routes(app: FastAPI, state: PlatformState) -> None:
    _artifact_routes(app, state)
    _dataset_routes(app, state)
    _secret_routes(app, state)

    @app.get("/api/cli/rollouts")
    async def list_rollouts(limit: int = 50, offset: int = 0, branch: str | None = None) -> Any:
        items = [r for r in state.rollouts if branch is None or r.get("branch") == branch]
        return page(items, limit, offset)


def _artifact_routes(app: FastAPI, state: PlatformState) -> None:
    def find(collection: str, run: str) -> dict[str, Any] | None:
        kind = RUN_KINDS.get(collection)
        return state.find_run(kind, run) if kind else None

    @app.get("/api/cli/{collection}/{run}/artifacts")
    async def list_artifacts(collection: str, run: str) -> Any:
        found = find(collection, run)
        if found is None:
            return error(404, "run_not_found", f"no run {run!r}")
        files = state.artifacts.get(found["id"], [])
        rows = {a.row_index for a in files if a.row_index is not None}
        return {
            "items": [a.listing() for a in files],
            "total_rows": max(rows) + 1 if rows else 0,
        }

    @app.get("/api/cli/{collection}/{run}/artifacts/{path:path}")
    def get_artifact(collection: str, run: str, path: str, request: Request) -> Any:
        found = find(collection, run)
        artifact = (
            next((a for a in state.artifacts.get(found["id"], []) if a.path == path), None)
            if found
            else None
        )
        if artifact is None:
            return error(404, "artifact_not_found", f"no artifact {path!r}")
        return _ranged(state, artifact, request)


def _ranged(state: PlatformState, artifact: Artifact, request: Request) -> Response:
    content = artifact.content
    etag = f'"{hashlib.sha256(content).hexdigest()}"'
    headers = {"ETag": etag, "Accept-Ranges": "bytes"}
    start, status = 0, 200
    wanted = request.headers.get("range", "")
    if_range = request.headers.get("if-range")
    if wanted.startswith("bytes=") and wanted.endswith("-") and if_range in (None, etag):
        start = int(wanted[len("bytes=") : -1])
        if start >= len(content):
            return Response(status_code=416, headers={"Content-Range": f"bytes */{len(content)}"})
        status = 206
        headers["Content-Range"] = f"bytes {start}-{len(content) - 1}/{len(content)}"
    headers["Content-Length"] = str(len(content) - start)
    pause = next((p for p in state.pauses if p.path == artifact.path), None)

    def body() -> Iterator[bytes]:
        offset = start
        while offset < len(content):
            end = min(offset + CHUNK, len(content))
            if pause is not None and offset < pause.after_bytes <= end:
                end = pause.after_bytes
                yield content[offset:end]
                offset = end
                pause.reached.set()
                pause.release.wait(30)
                continue
            yield content[offset:end]
            offset = end

    return StreamingResponse(
        body(), status_code=status, headers=headers, media_type="application/octet-stream"
    )


def _dataset_routes(app: FastAPI, state: PlatformState) -> None:
    lock = threading.Lock()

    @app.post("/api/cli/datasets/uploads")
    async def start_upload(request: Request) -> Any:
        body = await request.json()
        for key, kind in (("name", str), ("size", int), ("sha256", str), ("format", str)):
            if not isinstance(body.get(key), kind):
                return error(422, "invalid_body", f"{key} is required", key)
        if body["name"] in state.datasets and not body.get("overwrite"):
            return error(409, "dataset_exists", f"dataset {body['name']} exists", "name")
        upload_id = f"up_{state.next_id():04d}"
        state.uploads[upload_id] = {"meta": body, "parts": {}}
        return JSONResponse({"upload_id": upload_id, "part_size": state.part_size}, status_code=201)

    @app.put("/api/cli/datasets/uploads/{upload_id}/parts/{number}")
    async def put_part(upload_id: str, number: int, request: Request) -> Any:
        upload = state.uploads.get(upload_id)
        if upload is None or state.storage is None:
            return error(404, "upload_not_found", f"no upload {upload_id}")
        target = state.storage / f"{upload_id}.{number}"
        digest, size = hashlib.sha256(), 0
        with target.open("wb") as fh:
            async for chunk in request.stream():
                fh.write(chunk)
                digest.update(chunk)
                size += len(chunk)
        if size > state.part_size:
            return error(413, "part_too_large", f"part {number} is over {state.part_size} bytes")
        upload["parts"][number] = {"size": size, "sha256": digest.hexdigest()}
        return {"number": number, "size": size, "sha256": digest.hexdigest()}

    @app.post("/api/cli/datasets/uploads/{upload_id}/complete")
    async def complete(upload_id: str, request: Request) -> Any:
        upload = state.uploads.get(upload_id)
        if upload is None or state.storage is None:
            return error(404, "upload_not_found", f"no upload {upload_id}")
        claimed = (await request.json()).get("parts") or []
        numbers = [p.get("number") for p in claimed]
        if numbers != list(range(1, len(numbers) + 1)) or set(numbers) != set(upload["parts"]):
            return error(422, "parts_mismatch", "parts must be 1..N, all uploaded", "parts")
        for part in claimed:
            got = upload["parts"][part["number"]]
            if (got["size"], got["sha256"]) != (part.get("size"), part.get("sha256")):
                return error(422, "part_checksum", f"part {part['number']} differs", "parts")
        meta = upload["meta"]
        final = state.storage / f"dataset-{meta['name']}"
        digest = hashlib.sha256()
        with final.open("wb") as out:
            for number in numbers:
                source = state.storage / f"{upload_id}.{number}"
                with source.open("rb") as fh:
                    while block := fh.read(1 << 20):
                        digest.update(block)
                        out.write(block)
                source.unlink()
        if digest.hexdigest() != meta["sha256"] or final.stat().st_size != meta["size"]:
            return error(422, "checksum_mismatch", "the file's sha256 or size differs")
        with lock:
            dataset = {
                "id": f"ds_{state.next_id():04d}",
                "name": meta["name"],
                "filename": meta.get("filename"),
                "format": meta["format"],
                "size_bytes": meta["size"],
                "row_count": meta.get("row_count"),
                "sha256": meta["sha256"],
                "status": "uploaded",
                "created_at": now(),
                "data_preview": _preview(final, meta["format"]),
            }
            state.datasets[meta["name"]] = dataset
            state.dataset_logs[meta["name"]] = [
                {"timestamp": now(), "level": "info", "message": f"received {meta['size']} bytes"},
                {"timestamp": now(), "level": "info", "message": "parsed; status uploaded"},
            ]
        del state.uploads[upload_id]
        return JSONResponse(dataset, status_code=201)

    @app.get("/api/cli/datasets")
    async def list_datasets(limit: int = 50, offset: int = 0) -> Any:
        return page(list(reversed(state.datasets.values())), limit, offset)

    @app.get("/api/cli/datasets/{name}")
    async def get_dataset(name: str) -> Any:
        if name not in state.datasets:
            return error(404, "dataset_not_found", f"no dataset {name!r}")
        return state.datasets[name]

    @app.get("/api/cli/datasets/{name}/download")
    async def download_info(name: str) -> Any:
        dataset = state.datasets.get(name)
        if dataset is None:
            return error(404, "dataset_not_found", f"no dataset {name!r}")
        if dataset["status"] != "uploaded":
            return error(409, "dataset_not_ready", f"dataset {name!r} is {dataset['status']}")
        return {
            "path": f"/api/cli/datasets/{name}/content",
            "file_name": dataset.get("filename") or f"{name}.{dataset['format']}",
            "size": dataset["size_bytes"],
            "sha256": dataset["sha256"],
        }

    @app.get("/api/cli/datasets/{name}/content")
    def content(name: str, request: Request) -> Any:
        if name not in state.datasets or state.storage is None:
            return error(404, "dataset_not_found", f"no dataset {name!r}")
        path = f"datasets/{name}"
        data = (state.storage / f"dataset-{name}").read_bytes()
        return _ranged(state, Artifact("dataset", path, data), request)

    @app.get("/api/cli/datasets/{name}/logs")
    async def dataset_logs(name: str, limit: int = 50, cursor: str | None = None) -> Any:
        if name not in state.datasets:
            return error(404, "dataset_not_found", f"no dataset {name!r}")
        if not (cursor or "0").isdigit() or not 1 <= limit <= 200:
            return error(400, "invalid_query", "bad cursor or limit (1..200)")
        entries = state.dataset_logs.get(name, [])
        start = int(cursor or 0)
        page = entries[start : start + limit]
        end = start + len(page)
        return {"items": page, "next_cursor": str(end), "has_more": end < len(entries)}

    @app.delete("/api/cli/datasets/{name}")
    async def delete_dataset(name: str) -> Any:
        if state.datasets.pop(name, None) is None:
            return error(404, "dataset_not_found", f"no dataset {name!r}")
        if state.storage is not None:
            (state.storage / f"dataset-{name}").unlink(missing_ok=True)
        return Response(status_code=204)


def _preview(path: Path, fmt: str, rows: int = 20) -> list[dict[str, Any]] | None:
    """The first rows as the platform shows them (JSONL only here; others: no preview)."""
    if fmt != "jsonl":
        return None
    found: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                found.append(json.loads(line))
            if len(found) == rows:
                break
    return found


def _secret_routes(app: FastAPI, state: PlatformState) -> None:
    @app.put("/api/cli/secrets/{name}")
    async def put_secret(name: str, request: Request) -> Any:
        body = await request.json()
        scope = body.get("scope") or "personal"
        if not isinstance(body.get("value"), str) or not body["value"]:
            return error(422, "invalid_body", "value is required", "value")
        if scope not in ("personal", "workspace"):
            return error(422, "invalid_scope", f"unknown scope {scope}", "scope")
        previous = state.secrets.get((scope, name))
        record = {
            "name": name,
            "scope": scope,
            "created_at": previous["created_at"] if previous else now(),
            "updated_at": now(),
        }
        state.secrets[(scope, name)] = {**record, "value": body["value"]}
        return record  # never the value

    @app.get("/api/cli/secrets")
    async def list_secrets(limit: int = 50, offset: int = 0, scope: str = "all") -> Any:
        items = [
            {k: v for k, v in record.items() if k != "value"}
            for (where, _), record in sorted(state.secrets.items())
            if scope in ("all", where)
        ]
        return page(items, limit, offset)

    @app.delete("/api/cli/secrets/{name}")
    async def delete_secret(name: str, scope: str = "personal") -> Any:
        if state.secrets.pop((scope, name), None) is None:
            return error(404, "secret_not_found", f"no {scope} secret {name!r}")
        return Response(status_code=204)
