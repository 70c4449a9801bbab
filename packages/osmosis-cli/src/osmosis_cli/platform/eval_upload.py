"""``osmosis eval upload NAME_OR_DIR [--replace]`` (and ``eval run --upload``): a finished local
eval run's files into the platform, resumably.

The run is named by its manifest's ``local_run_id`` and the sha256 of ``manifest.json`` (the
manifest is never rewritten, so the pair names exactly this run). ``POST
/api/cli/eval-runs/imports`` opens (or resumes) an import with every file's path, size and
sha256; each file the platform does not have yet is sent with one streamed ``PUT`` (retried on
its own); ``POST .../finalize`` makes it a platform eval run. Interrupted, the same command
resumes: files the platform already holds are not sent again. Every file under a run folder went
through the redactor when it was written, so no credential is uploaded.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Output
from osmosis_cli.platform.client import PlatformClient
from osmosis_cli.platform.uploads import put_range

ENDPOINT = "/api/cli/eval-runs/imports"
#: Not part of a finished run's record: locks, partial writes, archives of older attempts.
_SKIPPED_SUFFIXES = (".lock", ".tmp", ".part", ".part-meta")


def run_files(run_dir: Path) -> list[dict[str, Any]]:
    """Every file of the run, sorted, with its size and sha256."""
    files: list[dict[str, Any]] = []
    for path in sorted(run_dir.rglob("*")):
        relative = path.relative_to(run_dir)
        if (
            not path.is_file()
            or path.is_symlink()
            or any(part.startswith(".") for part in relative.parts)
            or path.name.endswith(_SKIPPED_SUFFIXES)
        ):
            continue
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        files.append(
            {"path": relative.as_posix(), "size": path.stat().st_size, "sha256": digest.hexdigest()}
        )
    return files


def _finished_summary(run_dir: Path) -> dict[str, Any]:
    from osmosis_ai.eval.report import load_run

    header = load_run(run_dir).header
    if header.status in ("running", "interrupted"):
        raise CLIError(
            CLIErrorCode.CONFLICT,
            f"The local run {header.name} is {header.status}; upload it once a session has "
            f"finished it (resume it with 'osmosis eval run ... --name {header.name}').",
            details={"run": header.name, "status": header.status},
        )
    figures = header.figures
    return {
        "name": header.name,
        "status": header.status,
        "rollout": header.rollout,
        "model": header.model,
        "rows": figures.total_samples,
        "graded": figures.graded,
        "failed": figures.failed,
        "skipped": figures.skipped,
        "mean_reward": figures.mean_reward,
        "pass_rate": figures.pass_rate,
        "cost_usd": figures.cost_usd,
        "completed_at": header.completed_at,
    }


def _manifest(run_dir: Path) -> tuple[bytes, dict[str, Any]]:
    """``manifest.json``'s bytes (their sha256 names the run) and content."""
    try:
        raw = (run_dir / "manifest.json").read_bytes()
        manifest = json.loads(raw)
    except (OSError, ValueError):
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"{run_dir} has no readable manifest.json; it is not a local eval run folder.",
            details={"path": str(run_dir)},
        ) from None
    return raw, manifest if isinstance(manifest, dict) else {}


def upload_run(run_dir: Path, output: Output, *, replace: bool) -> dict[str, Any]:
    """Upload ``run_dir`` and return the finalized import (emits the ``eval.upload`` result)."""
    from osmosis_cli.platform.progress import TransferProgress

    raw, manifest = _manifest(run_dir)
    summary = _finished_summary(run_dir)
    files = run_files(run_dir)
    client = PlatformClient.from_login()
    started = client.request(
        "POST",
        ENDPOINT,
        json={
            "schema_version": 1,
            "local_run_id": manifest.get("local_run_id"),
            "manifest_digest": hashlib.sha256(raw).hexdigest(),
            "run": summary,
            "files": files,
            "replace": replace,
        },
    )
    if not isinstance(started, dict) or not started.get("session_id"):
        raise CLIError(CLIErrorCode.PLATFORM_ERROR, "The platform did not open the import.")
    have = {
        f.get("path"): f
        for f in started.get("files") or []
        if isinstance(f, dict) and f.get("state") == "uploaded"
    }
    todo = [f for f in files if f["path"] not in have]
    session = f"{ENDPOINT}/{quote(str(started['session_id']), safe='')}"
    total = sum(f["size"] for f in todo)
    with TransferProgress(output, f"Uploading {summary['name']}", total) as progress:
        for file in todo:
            sent = put_range(
                client,
                f"{session}/files/{quote(file['path'], safe='')}",
                run_dir / file["path"],
                0,
                file["size"],
                progress.advance,
            )
            if sent["sha256"] != file["sha256"]:
                raise CLIError(
                    CLIErrorCode.CONFLICT,
                    f"{file['path']} changed while it was being uploaded; run the upload again.",
                    details={"path": file["path"]},
                )
    done = client.request("POST", f"{session}/finalize", json={})
    if not isinstance(done, dict) or done.get("status") != "finalized":
        raise CLIError(
            CLIErrorCode.PLATFORM_ERROR,
            "The platform did not finalize the import; run the upload again to resume it.",
            details={"session_id": started["session_id"]},
        )
    name = done.get("eval_run_name") or summary["name"]
    output.emit_operation(
        "eval.upload",
        message=f"Uploaded local run {summary['name']} as platform eval run {name} "
        f"({len(todo)} file(s) sent, {len(have)} already there).",
        resource={
            "session_id": started["session_id"],
            "local_run_id": manifest.get("local_run_id"),
            "local_run_path": str(run_dir),
            "eval_run_id": done.get("eval_run_id"),
            "eval_run_name": name,
            "url": done.get("url"),
            "files": len(files),
            "sent": len(todo),
            "resumed": len(have),
        },
        next_steps=[f"osmosis eval info {name}"],
    )
    return done
