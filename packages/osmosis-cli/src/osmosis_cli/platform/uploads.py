"""Bytes from a file to the platform: one ``PUT`` of a byte range, streamed and hashed while it
is read, retried by the client on its own (the body is re-opened from the file each attempt).
Dataset parts and eval-run files both go through :func:`put_range`."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from osmosis_cli.platform.client import PlatformClient, Readable


class _RangeReader:
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


def put_range(
    client: PlatformClient,
    path: str,
    file: Path,
    offset: int,
    size: int,
    on_bytes: Callable[[int], None],
) -> dict[str, Any]:
    """``PUT`` ``size`` bytes of ``file`` from ``offset`` to API ``path``; returns the
    ``size`` and ``sha256`` of what was sent (what the platform must have received)."""
    readers: list[_RangeReader] = []

    def body() -> Readable:
        if readers:  # a retry: take back what the failed attempt reported
            on_bytes(-(size - readers[-1].remaining))
        readers.append(_RangeReader(file, offset, size, on_bytes))
        return readers[-1]

    headers = {"Content-Type": "application/octet-stream", "Content-Length": str(size)}
    with client.open("PUT", path, body=body, headers=headers) as response:
        response.read()
    return {"size": size, "sha256": readers[-1].sha256.hexdigest()}
