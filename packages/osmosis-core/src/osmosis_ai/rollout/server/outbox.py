"""The on-disk outbox: results that were not yet delivered when the server stopped.

At shutdown, every finished rollout whose result was neither fetched by a poller nor fully
delivered by callbacks is written here, one JSON file per rollout; the next server start reads
the files back (and removes them), so pollers can fetch with the lease token they already hold
and callbacks are sent again. Only the SHA-256 of a lease token is stored. A callback record
has to keep the controller's bearer key to be re-sent with it, so files are created with mode
0600 and written atomically (temporary file + rename).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

logger = logging.getLogger("osmosis_ai.rollout.server")

OUTBOX_VERSION = 1
_SUFFIX = ".json"


def record_name(rollout_id: str) -> str:
    """A file name for ``rollout_id``: a readable prefix plus a hash of the whole id, so long
    ids, unusual characters and case-insensitive file systems cannot lose a record."""
    prefix = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in rollout_id)
    digest = hashlib.sha256(rollout_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{prefix[:48]}-{digest}"


class Outbox:
    """A directory of JSON records, one per rollout (see :func:`record_name`). All methods are blocking: call them in a
    worker thread (``asyncio.to_thread``), never on the event loop."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def write(self, records: list[dict[str, Any]]) -> int:
        """Write ``records`` (each has a ``rollout_id``); return how many were written."""
        if not records:
            return 0
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        written = 0
        for record in records:
            rollout_id = record["rollout_id"]
            name = record_name(rollout_id)
            final = self.directory / f"{name}{_SUFFIX}"
            temp = self.directory / f".{name}.{os.getpid()}.tmp"
            try:
                data = json.dumps({"version": OUTBOX_VERSION, **record}).encode()
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(temp, final)
                written += 1
            except OSError as exc:
                logger.error("could not write outbox record for rollout %s: %s", rollout_id, exc)
                temp.unlink(missing_ok=True)
        return written

    def take(self) -> list[dict[str, Any]]:
        """Read every record and remove its file; unreadable files are kept and logged."""
        if not self.directory.is_dir():
            return []
        records: list[dict[str, Any]] = []
        for path in sorted(self.directory.glob(f"*{_SUFFIX}")):
            if path.name.startswith("."):
                continue
            try:
                record = json.loads(path.read_bytes())
                if not isinstance(record, dict) or record.get("version") != OUTBOX_VERSION:
                    raise ValueError("not an outbox record of a known version")
                if not isinstance(record.get("rollout_id"), str):
                    raise ValueError("record has no rollout_id")
            except (OSError, ValueError) as exc:
                logger.error("skipping unreadable outbox file %s: %s", path, exc)
                continue
            records.append(record)
            path.unlink(missing_ok=True)
        return records
