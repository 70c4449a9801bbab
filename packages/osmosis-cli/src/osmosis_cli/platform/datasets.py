"""``osmosis dataset validate | upload | list | info | preview | download | logs | delete``.

An upload is validated locally first (``dataset validate`` runs the same check alone): the
loader ``osmosis eval run`` uses (so a file the platform accepts is a file a local eval accepts),
one row at a time, plus the platform's own rules (:data:`PLATFORM_RULES`: JSONL/CSV/Parquet, at
most 5 GB, at least 4 rows, ``metadata`` cells JSON objects with consistent value types).
Then it is sent in parts:
``POST /api/cli/datasets/uploads`` announces name, size and sha256 and gets a part size; each
part is a ``PUT`` streamed from the file (retried on its own); ``POST .../complete`` lists the
parts' sizes and sha256s and the platform checks the whole. Memory stays flat for any file size.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Column, Output
from osmosis_cli.platform.client import PlatformClient
from osmosis_cli.platform.listing import Listing
from osmosis_cli.platform.uploads import put_range

ENDPOINT = "/api/cli/datasets"
COLUMNS = [
    Column("name", "Name"),
    Column("format", "Format"),
    Column("row_count", "Rows"),
    Column("size_bytes", "Bytes"),
    Column("status", "Status"),
    Column("created_at", "Created"),
]


#: What the platform accepts (its dataset documentation); ``dataset validate`` checks all of it.
MAX_BYTES = 5 * 1024**3
MIN_ROWS = 4
FORMATS = ("jsonl", "csv", "parquet")
PLATFORM_RULES = (
    f"a .{', .'.join(FORMATS)} file of at most 5 GB",
    f"at least {MIN_ROWS} rows, each valid for 'osmosis eval run' (docs/dataset-format.md)",
    "metadata cells: non-empty JSON objects, no empty nested objects, integers within 64 bits, "
    "the same value type for a key in every row",
)
_INT64 = (-(2**63), 2**63 - 1)


def validate_dataset(path: Path, output: Output, *, then: str = "nothing was sent") -> int:
    """Check ``path`` against the platform's rules (:data:`PLATFORM_RULES`), one row at a
    time; returns the row count. ``then`` ends each error message (what did not happen)."""
    from osmosis_ai.eval import DatasetError, iter_dataset

    size = _check_file(path, then)
    output.progress(f"Validating {path}...")
    count = 0
    types: dict[str, str] = {}
    try:
        for row in iter_dataset(path):
            count += 1
            if row.metadata is not None:
                problem = _metadata_problem(row.metadata, types)
                if problem:
                    raise DatasetError(f"row {row.source_index}: metadata {problem}")
    except DatasetError as exc:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"{path} is not a valid dataset: {exc}. Fix the file and try again; {then}.",
            details={"path": str(path), "valid_rows_before_error": count},
        ) from None
    if count < MIN_ROWS:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"{path} has {'no rows' if count == 0 else f'{count} row(s)'}; the platform needs "
            f"at least {MIN_ROWS}. Add rows and try again; {then}.",
            details={"path": str(path), "rows": count, "min_rows": MIN_ROWS, "size": size},
        )
    return count


def _check_file(path: Path, then: str) -> int:
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"{path}: the platform takes .{', .'.join(FORMATS)} files, not {
                path.suffix or 'a file without a suffix'
            }; {then}.",
            details={"path": str(path)},
        )
    try:
        size = path.stat().st_size
    except OSError:
        raise CLIError(
            CLIErrorCode.NOT_FOUND, f"{path} does not exist; {then}.", details={"path": str(path)}
        ) from None
    if size > MAX_BYTES:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"{path} is {size / 1024**3:.1f} GB; the platform takes files of at most 5 GB. "
            f"Split it; {then}.",
            details={"path": str(path), "size": size, "max_bytes": MAX_BYTES},
        )
    return size


def _metadata_problem(value: dict[str, Any], types: dict[str, str]) -> str | None:
    """What is wrong with one row's metadata object for the platform, or ``None``; records
    each key path's value type in ``types`` (a key must keep its type across rows)."""
    if not value:
        return "is an empty object (metadata mode needs a non-empty JSON object in every row)"
    stack: list[tuple[str, Any]] = [("$", value)]
    while stack:
        where, item = stack.pop()
        kind = _json_kind(item)
        if isinstance(item, dict) and not item and where != "$":
            return f"has an empty object at {where}"
        if item is not None:
            seen = types.setdefault(where, kind)
            if seen != kind:
                return f"has {_a(kind)} at {where} where an earlier row has {_a(seen)}"
        if isinstance(item, dict):
            stack.extend((f"{where}.{key}", child) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((f"{where}[]", child) for child in item)
        elif kind == "number" and isinstance(item, int) and not _INT64[0] <= item <= _INT64[1]:
            return f"has an integer outside 64 bits at {where}"
    return None


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"  # JSON has one number type
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "null"


def check_dataset_file(path: Path, output: Output) -> None:
    """``osmosis dataset validate FILE``: the upload's local check, alone."""
    rows = validate_dataset(path, output, then="the file is not ready for upload")
    size = path.stat().st_size
    output.emit_detail(
        {
            "valid": True,
            "file": str(path),
            "format": path.suffix.lower().lstrip("."),
            "size_bytes": size,
            "row_count": rows,
            "rules": list(PLATFORM_RULES),
        },
        title=f"{path.name}: valid ({rows} rows, {size} bytes)",
    )


def upload_dataset(
    file: Path, output: Output, *, name: str | None, overwrite: bool, yes: bool
) -> None:
    from osmosis_cli.platform.downloads import file_sha256
    from osmosis_cli.platform.progress import TransferProgress

    rows = validate_dataset(file, output)
    dataset_name = name or file.stem
    client = PlatformClient.from_login()
    if overwrite and _exists(client, dataset_name):
        question = f"Replace the platform dataset {dataset_name}?"
        if not output.confirm(question, assume_yes=yes):
            raise CLIError(CLIErrorCode.VALIDATION, "Upload cancelled; nothing was sent.")
    size = file.stat().st_size
    announced = {
        "name": dataset_name,
        "filename": file.name,
        "format": file.suffix.lower().lstrip("."),
        "size": size,
        "sha256": file_sha256(file),
        "row_count": rows,
        "overwrite": overwrite,
    }
    upload = client.request("POST", f"{ENDPOINT}/uploads", json=announced)
    if not isinstance(upload, dict) or not upload.get("upload_id"):
        raise CLIError(CLIErrorCode.PLATFORM_ERROR, "The platform did not start the upload.")
    upload_path = f"{ENDPOINT}/uploads/{quote(str(upload['upload_id']), safe='')}"
    part_size = int(upload.get("part_size") or size or 1)
    parts: list[dict[str, Any]] = []
    with TransferProgress(output, f"Uploading {file.name}", size) as progress:
        for number, offset in enumerate(range(0, max(size, 1), part_size), start=1):
            length = min(part_size, size - offset)
            sent = put_range(
                client, f"{upload_path}/parts/{number}", file, offset, length, progress.advance
            )
            parts.append({"number": number, **sent})
    dataset = client.request("POST", f"{upload_path}/complete", json={"parts": parts})
    dataset = dataset if isinstance(dataset, dict) else {"name": dataset_name}
    output.emit_operation(
        "dataset.upload",
        message=f"Uploaded dataset {dataset.get('name')} ({rows} rows, {size} bytes, "
        f"{len(parts)} part(s)).",
        resource=dataset,
        next_steps=[f"osmosis dataset info {dataset.get('name')}"],
    )


#: Dataset statuses (docs/platform-api.md): ready to train or eval on; still being processed.
READY_STATUSES = frozenset({"uploaded", "ready"})
IN_PROGRESS_STATUSES = frozenset({"uploading", "pending", "processing"})


def check_run_dataset(client: PlatformClient, name: str, workspace: Path, output: Output) -> None:
    """Before a run is submitted: its ``[experiment] dataset`` is on the platform and usable.
    Unknown: an error naming the upload; ``error``/``cancelled``: an error (it never becomes
    ready); still processing: a warning (it may yet become ready)."""
    key = f"[experiment] dataset = {name!r}"
    try:
        dataset = client.request("GET", f"{ENDPOINT}/{quote(name, safe='')}")
    except CLIError as error:
        if error.code is not CLIErrorCode.NOT_FOUND:
            raise
        raise CLIError(
            CLIErrorCode.NOT_FOUND,
            f"{key}: the platform has no dataset of that name, so the run could not start; "
            f"nothing was submitted. {_upload_hint(name, workspace)}, or name an existing one "
            "('osmosis dataset list').",
            details={"dataset": name, "key": "experiment.dataset"},
        ) from None
    status = str(dataset.get("status") or "") if isinstance(dataset, dict) else ""
    if not status or status in READY_STATUSES:
        return
    if status in IN_PROGRESS_STATUSES:
        output.warn(
            "DATASET_NOT_READY",
            f"{key} is still {status} on the platform; the run fails if its processing does "
            f"(check 'osmosis dataset info {name}')",
            dataset=name,
            status=status,
        )
        return
    raise CLIError(
        CLIErrorCode.VALIDATION,
        f"{key} is {status} on the platform and cannot be used; nothing was submitted. See why "
        f"with 'osmosis dataset logs {name}', then upload it again "
        f"('osmosis dataset upload FILE --name {name} --overwrite').",
        details={"dataset": name, "status": status, "key": "experiment.dataset"},
    )


def _upload_hint(name: str, workspace: Path) -> str:
    """``Upload it: 'osmosis dataset upload data/<name>.jsonl'`` with the workspace's file when
    there is one (a dataset is named after its file's stem)."""
    local = [workspace / "data" / f"{name}.{fmt}" for fmt in FORMATS]
    found = next((p for p in local if p.is_file()), None)
    if found is not None:
        return f"Upload it: 'osmosis dataset upload {found.relative_to(workspace)}'"
    return f"Upload it: 'osmosis dataset upload FILE --name {name}'"


def _exists(client: PlatformClient, name: str) -> bool:
    try:
        client.request("GET", f"{ENDPOINT}/{quote(name, safe='')}")
    except CLIError as error:
        if error.code is CLIErrorCode.NOT_FOUND:
            return False
        raise
    return True


DATASETS = Listing(
    ENDPOINT,
    COLUMNS,
    plain=lambda d: f"{d.get('name')}\t{d.get('row_count')}\t{d.get('status')}",
    title="Datasets",
    empty="No datasets yet. Upload one with 'osmosis dataset upload FILE'.",
)


def list_datasets(output: Output, *, limit: int, offset: int, all_pages: bool) -> None:
    DATASETS.emit(output, limit=limit, offset=offset, all_pages=all_pages)


def show_dataset(name: str, output: Output) -> None:
    data = PlatformClient.from_login().request("GET", f"{ENDPOINT}/{quote(name, safe='')}")
    if not isinstance(data, dict):
        raise CLIError(CLIErrorCode.PLATFORM_ERROR, "The platform returned no dataset.")
    output.emit_detail(data, title=f"Dataset {data.get('name') or name}")


#: Processing statuses of a platform dataset (its documentation).
IN_PROGRESS = frozenset({"uploading", "pending", "processing"})
READY = frozenset({"uploaded", "ready"})


def _dataset(client: PlatformClient, name: str) -> dict[str, Any]:
    data = client.request("GET", f"{ENDPOINT}/{quote(name, safe='')}")
    if not isinstance(data, dict):
        raise CLIError(CLIErrorCode.PLATFORM_ERROR, "The platform returned no dataset.")
    return data


def preview_dataset(name: str, output: Output, *, rows: int) -> None:
    """``osmosis dataset preview NAME [--rows N]``: the first rows the platform parsed."""
    if rows < 1:
        raise CLIError(CLIErrorCode.VALIDATION, "--rows must be 1 or more.")
    data = _dataset(PlatformClient.from_login(), name)
    preview = data.get("data_preview")
    status = data.get("status")
    if not isinstance(preview, list):
        message = (
            f"Dataset {name} is still {status}; try again when it is uploaded."
            if status in IN_PROGRESS
            else f"No preview is available for dataset {name} (status: {status})."
        )
        output.emit_detail(
            {
                "dataset": name,
                "status": status,
                "available": False,
                "rows": None,
                "message": message,
            },
            title=f"Dataset {name}: no preview",
        )
        return
    shown = [row for row in preview[:rows]]
    keys = dict.fromkeys(k for row in shown if isinstance(row, dict) for k in row)
    output.emit_list(
        shown,
        columns=[Column(str(key), str(key)) for key in keys],  # one per column of the rows
        plain=lambda row: json.dumps(row, ensure_ascii=False),
        extra={
            "dataset": name,
            "status": status,
            "available": True,
            "requested_rows": rows,
            "returned_rows": len(shown),
        },
    )


def download_dataset(name: str, output: Output, *, dest: Path | None, overwrite: bool) -> None:
    """``osmosis dataset download NAME [-o PATH] [--overwrite]``: the uploaded file, streamed,
    resumable and checksum-verified (:mod:`osmosis_cli.platform.downloads`)."""
    from osmosis_cli.platform.downloads import RemoteFile, download
    from osmosis_cli.platform.progress import TransferProgress

    client = PlatformClient.from_login()
    data = _dataset(client, name)
    status = data.get("status")
    if status not in READY:
        hint = (
            "try again when it is uploaded"
            if status in IN_PROGRESS
            else (f"see 'osmosis dataset logs {name}'")
        )
        raise CLIError(
            CLIErrorCode.CONFLICT,
            f"Dataset {name} is not available for download (status: {status}); {hint}.",
            details={"dataset": name, "status": status},
        )
    info = client.request("GET", f"{ENDPOINT}/{quote(name, safe='')}/download")
    if not isinstance(info, dict) or not isinstance(info.get("path"), str):
        raise CLIError(CLIErrorCode.PLATFORM_ERROR, "The platform did not say where the file is.")
    filename = Path(str(info.get("file_name") or data.get("filename") or name)).name
    target = _destination(dest, filename)
    if target.exists() and not overwrite:
        raise CLIError(
            CLIErrorCode.CONFLICT,
            f"{target} exists; pass --overwrite to replace it, or -o another path.",
            details={"path": str(target)},
        )
    size = info.get("size") if isinstance(info.get("size"), int) else data.get("size_bytes")
    remote = RemoteFile(
        path=info["path"],
        dest=target,
        size=size if isinstance(size, int) else None,
        sha256=info.get("sha256") or data.get("sha256"),
    )
    from osmosis_cli.platform.downloads import resumable_bytes

    total, done = remote.size or 0, resumable_bytes(remote)
    with TransferProgress(output, f"Downloading {filename}", total, done=done) as progress:
        how = download(client, remote, on_bytes=progress.advance)
    output.emit_operation(
        "dataset.download",
        message=f"Dataset {name} {how} to {target}.",
        resource={**data, "output_path": str(target), "transfer": how},
    )


def _destination(dest: Path | None, filename: str) -> Path:
    if dest is None:
        return Path.cwd() / filename
    if dest.is_dir() or str(dest).endswith(("/", "\\")):
        return dest / filename
    return dest


def dataset_logs(name: str, output: Output, *, limit: int, cursor: str | None) -> None:
    """``osmosis dataset logs NAME``: the dataset's processing log, one page, oldest first."""
    from osmosis_cli.platform.run_logs import emit_log_page

    client = PlatformClient.from_login()
    page = client.request(
        "GET",
        f"{ENDPOINT}/{quote(name, safe='')}/logs",
        params={"limit": limit, "cursor": cursor},
    )
    emit_log_page(page, output, next_step=f"osmosis dataset info {name}")


def delete_dataset(name: str, output: Output, *, yes: bool) -> None:
    client = PlatformClient.from_login()
    client.request("GET", f"{ENDPOINT}/{quote(name, safe='')}")  # NOT_FOUND before asking
    if not output.confirm(f"Delete the platform dataset {name}?", assume_yes=yes):
        raise CLIError(CLIErrorCode.VALIDATION, "Not deleted; nothing was sent.")
    client.request("DELETE", f"{ENDPOINT}/{quote(name, safe='')}")
    output.emit_operation(
        "dataset.delete", message=f"Deleted dataset {name}.", resource={"name": name}
    )
