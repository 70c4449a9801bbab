"""One file from the platform to disk: streamed, atomic, resumable, checksum-verified.

Bytes go to ``<dest>.part`` next to the destination, with ``<dest>.part-meta`` recording which
remote version they belong to (size, sha256, ETag). A later run with the same remote version
resumes with ``Range: bytes=<have>-`` (``If-Range`` guards against a changed file); a platform
that ignores the range (``200``) gets a fresh start. When the bytes are complete the sha256 is
checked (when the platform gives one) and the part is renamed over the destination, so the
destination is either absent, the old file, or the whole new file, never a torn one.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osmosis_ai.atomic_file import move_into_place
from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.platform.client import PlatformClient

CHUNK = 1 << 20
STREAM_ATTEMPTS = 3  # a connection dropped mid-file is resumed this many times in one run


@dataclass(frozen=True)
class RemoteFile:
    path: str  # API path to GET
    dest: Path
    size: int | None = None
    sha256: str | None = None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def part_paths(dest: Path) -> tuple[Path, Path]:
    return dest.with_name(dest.name + ".part"), dest.with_name(dest.name + ".part-meta")


def resumable_bytes(remote: RemoteFile) -> int:
    """Bytes already on disk for this remote version (0 when nothing can be resumed)."""
    part, meta = part_paths(remote.dest)
    if not part.is_file() or not meta.is_file():
        return 0
    try:
        recorded = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    if recorded.get("size") != remote.size or recorded.get("sha256") != remote.sha256:
        return 0
    return part.stat().st_size


def download(client: PlatformClient, remote: RemoteFile, *, on_bytes: Callable[[int], None]) -> str:
    """Fetch ``remote`` into ``remote.dest``; returns ``"downloaded"`` or ``"resumed"``."""
    part, meta = part_paths(remote.dest)
    remote.dest.parent.mkdir(parents=True, exist_ok=True)
    have = resumable_bytes(remote)
    resumed = have > 0
    etag: str | None = _read_meta(meta).get("etag") if resumed else None
    if not resumed:
        part.unlink(missing_ok=True)
        _write_meta(meta, remote, None)
    for attempt in range(1, STREAM_ATTEMPTS + 1):
        if remote.size is not None and have == remote.size:
            break  # every byte arrived before the interruption
        try:
            have, etag = _stream(client, remote, part, have, etag, on_bytes)
            break
        except CLIError as error:
            if error.code is not CLIErrorCode.NETWORK or attempt == STREAM_ATTEMPTS:
                raise
            have = part.stat().st_size if part.exists() else 0
            _write_meta(meta, remote, etag)
    _verify(remote, part, meta, have)
    move_into_place(part, remote.dest)
    meta.unlink(missing_ok=True)
    return "resumed" if resumed else "downloaded"


def _stream(
    client: PlatformClient,
    remote: RemoteFile,
    part: Path,
    have: int,
    etag: str | None,
    on_bytes: Callable[[int], None],
) -> tuple[int, str | None]:
    headers = {"Accept": "*/*"}
    if have:
        headers["Range"] = f"bytes={have}-"
        if etag:
            headers["If-Range"] = etag
    with client.open("GET", remote.path, headers=headers) as response:
        if have and response.status != 206:  # the platform sent the whole file again
            have = 0
            on_bytes(-part.stat().st_size)
        etag = response.headers.get("ETag") or etag
        if not have:
            _write_meta(part.with_name(part.name + "-meta"), remote, etag)
        with part.open("r+b" if have else "wb") as fh:
            fh.seek(have)
            try:
                while chunk := response.read1(CHUNK):
                    fh.write(chunk)
                    # Into the file now, not the write buffer: a killed process keeps (and a
                    # resume skips) every byte it received. One write per chunk either way.
                    fh.flush()
                    have += len(chunk)
                    on_bytes(len(chunk))
            except OSError as exc:  # connection dropped mid-body
                fh.flush()
                raise CLIError(
                    CLIErrorCode.NETWORK,
                    f"The download of {remote.dest.name} was interrupted ({exc}); "
                    "run the command again to resume it.",
                    details={"path": str(remote.dest), "bytes": have},
                ) from None
            fh.flush()
            os.fsync(fh.fileno())
    return have, etag


def _verify(remote: RemoteFile, part: Path, meta: Path, have: int) -> None:
    problem = None
    if remote.size is not None and have != remote.size:
        problem = f"got {have} bytes, expected {remote.size}"
    elif remote.sha256 and file_sha256(part) != remote.sha256.lower():
        problem = "its sha256 does not match the one the platform announced"
    if problem:
        part.unlink(missing_ok=True)
        meta.unlink(missing_ok=True)
        raise CLIError(
            CLIErrorCode.PLATFORM_ERROR,
            f"The download of {remote.dest.name} is corrupt ({problem}); the partial file was "
            "removed. Run the command again.",
            details={"path": str(remote.dest), "expected_sha256": remote.sha256},
        )


def _read_meta(meta: Path) -> dict[str, Any]:
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_meta(meta: Path, remote: RemoteFile, etag: str | None) -> None:
    record = {"size": remote.size, "sha256": remote.sha256, "etag": etag, "path": remote.path}
    meta.write_text(json.dumps(record), encoding="utf-8")
