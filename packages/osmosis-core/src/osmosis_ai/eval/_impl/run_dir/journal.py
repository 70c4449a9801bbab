"""The durable journal of finished work items (``events.jsonl``).

Why: a result only *counts* once it is in the journal, so that ``kill -9`` at any moment loses
no counted result and a rerun repeats no completed item. Each record is one JSON line;
:meth:`Journal.append` returns once the line is written (one ``write``, to the page cache),
which a killed process cannot undo.

Why the ``fdatasync`` runs in the background, at most every ``SYNC_INTERVAL_SEC``, and no caller
waits for it (:class:`osmosis_ai._util.group_sync.GroupSync`, as for the rollout server's outbox): only
a machine crash or power cut can lose a written line, and what that loses is a re-run, never a
double count. The rollout server forgets a result once the controller has fetched it, so a line
lost with the page cache leaves its work item pending and the resume runs it again; the latest
record of a work item is the one that counts, so nothing is counted twice. Waiting for the
fsync of each group commit (on a thread of its own, as before) cost about 0.27 ms of controller
CPU per row with one rollout server (~1.3 rows per fsync, each a thread hand-off and a loop
wake-up; see docs/decisions.md).
:meth:`Journal.close` (the end of every session, before finalisation) syncs what is left; a
failed background sync is raised by the next append (the run stops as on a full disk) or by
``close``.

A torn last line (the process died mid-write) is ignored on load and cut off before the file
is appended to again. A complete line that is not a JSON object (a NUL-filled block after a
power cut, invalid UTF-8, a stray edit) is skipped too and counted (:func:`count_unreadable`),
so the resume reports it and the item it held simply runs again. For one work item the *last*
record wins (``--retry-failed`` appends a new attempt after a failed one).
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from osmosis_ai._util import json_bounded
from osmosis_ai._util.append_only import append_whole
from osmosis_ai._util.group_sync import GroupSync
from osmosis_ai._util.redaction import file_redactor, redact_file_data

WorkKey = tuple[int, int]  # (row_index, run_index)


def iter_records(path: Path) -> Iterator[dict[str, Any]]:
    """Every complete record in file order; a torn or corrupt line is skipped."""
    if not path.exists():
        return
    with path.open("rb") as fh:
        for line in fh:
            if not line.endswith(b"\n"):
                return  # torn final write
            record = _decode(line)
            if record is not None:
                yield record


def _decode(line: bytes) -> dict[str, Any] | None:
    try:
        record = json_bounded.loads(line)  # a NUL, invalid UTF-8, nested too deep: ValueError
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def count_unreadable(path: Path) -> int:
    """How many complete lines of ``path`` are not JSON objects (skipped by the reader)."""
    if not path.exists():
        return 0
    with path.open("rb") as fh:
        return sum(1 for line in fh if line.endswith(b"\n") and _decode(line) is None)


def load_latest(path: Path) -> dict[WorkKey, dict[str, Any]]:
    """The latest record of each work item."""
    latest: dict[WorkKey, dict[str, Any]] = {}
    for record in iter_records(path):
        try:
            key = (int(record["row_index"]), int(record["run_index"]))
        except (KeyError, TypeError, ValueError):
            continue
        latest[key] = record
    return latest


class LatestRecords:
    """Where each work item's latest record is in the journal, found in one pass: what
    :func:`load_latest` gives, without holding the records (a finalisation reads each back
    once, in work-item order).

    Held: the byte offset of each planned work item's latest record (8 bytes per work item,
    ``position`` is its place in the plan's work-item list), a dict entry for a record of a work
    item outside the plan (none, unless the plan shrank) and the names of the top-level keys
    seen. Use as a context manager (the journal stays open for reading).
    """

    def __init__(self, path: Path, position: Callable[[WorkKey], int | None], size: int) -> None:
        self.path = path
        #: What the scan was given: a work key's position in the plan's work items.
        self.position = position
        self._offsets = array("q", [-1]) * size
        self.outside: dict[WorkKey, int] = {}
        self.keys_seen: set[str] = set()
        self._fh = path.open("rb") if path.exists() else None
        if self._fh is not None:
            self._scan(self._fh, position)

    def _scan(self, fh: BinaryIO, position: Callable[[WorkKey], int | None]) -> None:
        offset = 0
        for line in fh:
            start, offset = offset, offset + len(line)
            if not line.endswith(b"\n"):
                return  # torn final write
            record = _decode(line)
            if record is None:
                continue
            try:
                key = (int(record["row_index"]), int(record["run_index"]))
            except (KeyError, TypeError, ValueError):
                continue
            self.keys_seen.update(record)
            at = position(key)
            if at is None:
                self.outside[key] = start
            else:
                self._offsets[at] = start

    def __enter__(self) -> LatestRecords:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def at(self, position: int) -> dict[str, Any] | None:
        """The latest record of the work item at ``position`` (``None``: not finished)."""
        return self._read(self._offsets[position])

    def offset(self, position: int) -> int:
        """Where the latest record of the work item at ``position`` starts (-1: none)."""
        return self._offsets[position]

    def outside_record(self, key: WorkKey) -> dict[str, Any] | None:
        return self._read(self.outside[key])

    def _read(self, offset: int) -> dict[str, Any] | None:
        if offset < 0 or self._fh is None:
            return None
        self._fh.seek(offset)
        return _decode(self._fh.readline())

    def positions(self) -> Iterator[int]:
        """The positions of the work items that have a record, in order."""
        return (i for i, offset in enumerate(self._offsets) if offset >= 0)


def _truncate_torn_tail(path: Path) -> None:
    """Cut a partial last line so the next append starts on a fresh line (reading back from
    the end only as far as the last line break, not the whole journal)."""
    if not path.exists():
        return
    with path.open("rb+") as fh:
        cut = fh.seek(0, os.SEEK_END)
        if not cut:
            return
        fh.seek(cut - 1)
        if fh.read(1) == b"\n":
            return
        while cut > 0:
            step = min(cut, _TAIL_CHUNK)
            fh.seek(cut - step)
            at = fh.read(step).rfind(b"\n")
            cut -= step
            if at >= 0:
                cut += at + 1
                break
        fh.truncate(cut)
        fh.flush()
        os.fsync(fh.fileno())


#: How much of a torn journal's end is read at a time, looking for its last line break.
_TAIL_CHUNK = 1 << 16


def append_offset(path: Path) -> int:
    """Where the next record appended to ``path`` will start: its size once a torn last line
    is cut off (what opening a :class:`Journal` does). A session notes it before dispatching,
    so the records at or after it are the ones it finished (a count and one offset, instead of
    every rollout id it ran: issue 39)."""
    _truncate_torn_tail(path)
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


class Journal:
    """Append-only JSON-lines file: each record written at once, synced in the background."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        _truncate_torn_tail(path)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._size = os.fstat(self._fd).st_size  # only this object appends to the file
        self._closed = False
        self._written = False  # anything written since the journal was opened
        self._sync_error: OSError | None = None  # a background sync failed; not reported yet
        # Its thread starts at the first write; close() stops it and syncs what is left.
        self._syncer = GroupSync(self._sync, name=f"osmosis-journal-{path.name}")

    async def append(self, record: dict[str, Any]) -> None:
        """Write ``record``; on return it is in the file (a killed process loses nothing) and
        it is made durable against a machine crash within ``SYNC_INTERVAL_SEC`` (see
        :mod:`osmosis_ai._util.group_sync`)."""
        self.append_sync(record)

    def append_sync(self, record: dict[str, Any]) -> None:
        """:meth:`append` for code outside an event loop (it never waits for a sync)."""
        if self._closed:
            raise RuntimeError("journal is closed")
        if self._sync_error is not None:
            error, self._sync_error = self._sync_error, None
            raise error
        self._write(redact_file_data(file_redactor(self.path), _encode(record)))
        self._syncer.wake()

    def _write(self, data: bytes) -> None:
        """Append ``data``; on failure (a full disk) cut what was written back off, so no
        partial line is left for later appends to follow, and name the file in the error."""
        try:
            append_whole(self._fd, data, self._size)
        except OSError as exc:
            raise self._named(exc) from exc
        self._size += len(data)
        self._written = True

    def _sync(self) -> None:
        """One ``fdatasync`` covering everything written before it (on the syncer's thread at
        most every ``SYNC_INTERVAL_SEC``, and on :meth:`close`); a failure is kept for the next
        append or ``close`` to raise."""
        if not self._written:
            return
        try:
            os.fdatasync(self._fd)
        except OSError as exc:
            self._sync_error = self._named(exc)

    def _named(self, exc: OSError) -> OSError:
        if exc.filename is not None:
            return exc
        return OSError(exc.errno, exc.strerror, str(self.path))

    async def aclose(self) -> None:
        """Sync what is written and close the file."""
        self.close()

    def close(self) -> None:
        """Stop the syncer, sync what it has not, and close the file; a sync that failed and
        was not reported by an append is raised here."""
        if self._closed:
            return
        self._closed = True
        try:
            self._syncer.stop()  # joins the thread (it must not find its file closed), syncs
        finally:
            os.close(self._fd)
        if self._sync_error is not None:
            error, self._sync_error = self._sync_error, None
            raise error


#: ``json.dumps`` with these options builds a new encoder per call.
_dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def _encode(record: dict[str, Any]) -> bytes:
    return (_dumps(record) + "\n").encode()
