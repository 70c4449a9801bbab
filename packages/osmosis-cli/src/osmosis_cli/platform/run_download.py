"""``eval download``: a platform eval run's metrics and trajectories, to a local folder.

``GET .../artifacts`` lists the files (type, relative path, size, sha256, row); the CLI picks
the ``--type``\\s and ``--rows`` asked for, checks every destination first (nothing is touched
when one would be overwritten without ``--overwrite``), then fetches each file with
:mod:`osmosis_cli.platform.downloads`. Files already present with the announced sha256 are kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Output
from osmosis_cli.platform.client import PlatformClient
from osmosis_cli.platform.downloads import RemoteFile, download, file_sha256, resumable_bytes
from osmosis_cli.platform.run_ops import Kind, fetch_run, label, run_path

TYPES = ("metrics", "trajectories", "artifacts", "logs")
DEFAULT_TYPES = "metrics,trajectories"
#: A benchmark run's files (``benchmark runs download --type``), default ``summary,results``.
BENCHMARK_TYPES = ("summary", "results", "artifacts", "logs")
BENCHMARK_DEFAULT_TYPES = "summary,results"
CONFIRM_ABOVE_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True)
class DownloadOptions:
    run: str
    output_dir: Path | None = None
    types: str = DEFAULT_TYPES
    rows: str | None = None
    overwrite: bool = False
    yes: bool = False


def parse_types(spec: str, allowed: tuple[str, ...] = TYPES) -> list[str]:
    names = [t.strip() for t in spec.split(",") if t.strip()]
    if "all" in names:
        return list(allowed)
    unknown = [t for t in names if t not in allowed]
    if unknown or not names:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"--type {spec!r}: unknown type(s) {', '.join(unknown) or '(none)'}; use a "
            f"comma-separated list of {', '.join(allowed)}, or 'all'.",
            details={"flags": ["--type"], "allowed": [*allowed, "all"]},
        )
    return names


def folder_name(name: str, run_id: str) -> str:
    """The default output folder: the run name made safe as one path segment."""
    for candidate in (name, run_id):  # the platform names both; neither may leave the folder
        safe = candidate.replace("/", "_").replace("\\", "_").strip()
        if safe not in ("", ".", "..") and not safe.startswith(".."):
            return safe
    return "run"


def _select(
    items: list[dict[str, Any]], types: list[str], rows: str | None, total: int
) -> list[dict[str, Any]]:
    chosen = [item for item in items if item.get("type") in types]
    if rows is None:
        return chosen
    from osmosis_ai.eval import SelectionError, parse_rows_spec

    try:
        wanted = set(parse_rows_spec(rows, total))
    except SelectionError as exc:
        raise CLIError(CLIErrorCode.VALIDATION, str(exc), details={"flags": ["--rows"]}) from None
    return [item for item in chosen if item.get("row_index") is None or item["row_index"] in wanted]


def _remote(kind: Kind, run_id: str, item: dict[str, Any], root: Path) -> RemoteFile:
    rel = str(item.get("path") or "")
    parts = Path(rel).parts
    if not rel or Path(rel).is_absolute() or ".." in parts:
        raise CLIError(
            CLIErrorCode.PLATFORM_ERROR,
            f"The platform listed an artifact with an unsafe path {rel!r}; nothing was written.",
            details={"path": rel},
        )
    return RemoteFile(
        path=run_path(kind, run_id, "artifacts", quote(rel, safe="/")),
        dest=root / rel,
        size=item.get("size") if isinstance(item.get("size"), int) else None,
        sha256=item.get("sha256") if isinstance(item.get("sha256"), str) else None,
    )


def download_run(kind: Kind, options: DownloadOptions, output: Output) -> None:
    from osmosis_cli.platform.progress import TransferProgress

    types = parse_types(options.types, BENCHMARK_TYPES if kind == "benchmark" else TYPES)
    client = PlatformClient.from_login()
    run = fetch_run(kind, options.run, client)
    run_id = str(run.get("id") or options.run)
    name = str(run.get("name") or run_id)
    listing = client.request("GET", run_path(kind, run_id, "artifacts"))
    items = listing.get("items") if isinstance(listing, dict) else None
    if not isinstance(items, list):
        raise CLIError(CLIErrorCode.PLATFORM_ERROR, "The platform listed no artifacts.")
    total_rows = listing.get("total_rows")
    total_rows = total_rows if isinstance(total_rows, int) else 0
    selected = _select([i for i in items if isinstance(i, dict)], types, options.rows, total_rows)
    root = options.output_dir or Path(folder_name(name, run_id))
    remotes = [_remote(kind, run_id, item, root) for item in selected]
    todo, kept = _plan(remotes, overwrite=options.overwrite)
    remaining = sum((r.size or 0) - resumable_bytes(r) for r in todo)
    if remaining > CONFIRM_ABOVE_BYTES and not output.confirm(
        f"Download {remaining / 2**20:.0f} MiB into {root}?", assume_yes=options.yes
    ):
        raise CLIError(CLIErrorCode.VALIDATION, "Download cancelled; nothing was written.")
    results = [{"path": str(r.dest), "status": "up_to_date", "size": r.size} for r in kept]
    total = sum(r.size or 0 for r in todo)
    done = sum(resumable_bytes(r) for r in todo)
    with TransferProgress(output, f"{name}", total, done=done) as progress:
        for remote in todo:
            status = download(client, remote, on_bytes=progress.advance)
            results.append({"path": str(remote.dest), "status": status, "size": remote.size})
    fetched = sum(1 for r in results if r["status"] != "up_to_date")
    output.emit_operation(
        {"eval": "eval", "training": "train", "benchmark": "benchmark.runs"}[kind] + ".download",
        message=f"Downloaded {fetched} file(s) of {label(kind)} run {name} into {root} "
        f"({len(kept)} already up to date).",
        resource={"id": run_id, "name": name, "output_dir": str(root), "files": results},
    )


def _plan(
    remotes: Sequence[RemoteFile], *, overwrite: bool
) -> tuple[list[RemoteFile], list[RemoteFile]]:
    """Split into files to fetch and files already identical; refuse silent overwrites."""
    todo: list[RemoteFile] = []
    kept: list[RemoteFile] = []
    clashes: list[str] = []
    for remote in remotes:
        if not remote.dest.exists():
            todo.append(remote)
        elif remote.sha256 and file_sha256(remote.dest) == remote.sha256.lower():
            kept.append(remote)
        elif overwrite:
            todo.append(remote)
        else:
            clashes.append(str(remote.dest))
    if clashes:
        raise CLIError(
            CLIErrorCode.CONFLICT,
            f"{len(clashes)} file(s) already exist and differ from the platform's, e.g. "
            f"{clashes[0]}. Pass --overwrite to replace them; nothing was downloaded.",
            details={"paths": clashes[:50], "flags": ["--overwrite"]},
        )
    return todo, kept
