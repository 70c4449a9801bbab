"""``osmosis dataset upload | list | info | delete``.

An upload is validated locally first, with the loader ``osmosis eval run`` uses (so a file the
platform accepts is a file a local eval accepts), one row at a time. Then it is sent in parts:
``POST /api/cli/datasets/uploads`` announces name, size and sha256 and gets a part size; each
part is a ``PUT`` streamed from the file (retried on its own); ``POST .../complete`` lists the
parts' sizes and sha256s and the platform checks the whole. Memory stays flat for any file size.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Column, Output
from osmosis_cli.platform.client import PlatformClient, Readable
from osmosis_cli.platform.listing import Listing

ENDPOINT = "/api/cli/datasets"
COLUMNS = [
    Column("name", "Name"),
    Column("format", "Format"),
    Column("row_count", "Rows"),
    Column("size_bytes", "Bytes"),
    Column("status", "Status"),
    Column("created_at", "Created"),
]


def validate_dataset(path: Path, output: Output) -> int:
    """Check every row with the ``eval run`` rules; returns the row count."""
    from osmosis_ai.eval import DatasetError, iter_dataset

    output.progress(f"Validating {path}...")
    count = 0
    try:
        for _ in iter_dataset(path):
            count += 1
    except DatasetError as exc:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"{path} is not a valid dataset: {exc}. Fix the file and upload again; nothing "
            "was sent.",
            details={"path": str(path), "valid_rows_before_error": count},
        ) from None
    if count == 0:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"{path} has no rows; nothing was sent.",
            details={"path": str(path)},
        )
    return count


class _PartReader:
    """A read-only view of ``size`` bytes of a file from ``offset``, hashing what it serves."""

    def __init__(self, path: Path, offset: int, size: int, on_bytes: Callable[[int], None]):
        self._fh: IO[bytes] = path.open("rb")
        self._fh.seek(offset)
        self.remaining = size
        self._on_bytes = on_bytes
        self.sha256 = hashlib.sha256()

    def read(self, amount: int = -1) -> bytes:
        if self.remaining <= 0:
            return b""
        amount = self.remaining if amount is None or amount < 0 else min(amount, self.remaining)
        data = self._fh.read(amount)
        self.remaining -= len(data)
        self.sha256.update(data)
        self._on_bytes(len(data))
        return data

    def close(self) -> None:
        self._fh.close()


def _send_part(
    client: PlatformClient,
    path: str,
    file: Path,
    offset: int,
    size: int,
    on_bytes: Callable[[int], None],
) -> dict[str, Any]:
    readers: list[_PartReader] = []

    def body() -> Readable:
        if readers:  # a retry: take back what the failed attempt reported
            on_bytes(-(size - readers[-1].remaining))
        readers.append(_PartReader(file, offset, size, on_bytes))
        return readers[-1]

    headers = {"Content-Type": "application/octet-stream", "Content-Length": str(size)}
    with client.open("PUT", path, body=body, headers=headers) as response:
        response.read()
    return {"size": size, "sha256": readers[-1].sha256.hexdigest()}


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
            sent = _send_part(
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


def delete_dataset(name: str, output: Output, *, yes: bool) -> None:
    client = PlatformClient.from_login()
    client.request("GET", f"{ENDPOINT}/{quote(name, safe='')}")  # NOT_FOUND before asking
    if not output.confirm(f"Delete the platform dataset {name}?", assume_yes=yes):
        raise CLIError(CLIErrorCode.VALIDATION, "Not deleted; nothing was sent.")
    client.request("DELETE", f"{ENDPOINT}/{quote(name, safe='')}")
    output.emit_operation(
        "dataset.delete", message=f"Deleted dataset {name}.", resource={"name": name}
    )
