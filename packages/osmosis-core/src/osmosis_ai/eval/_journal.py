"""The durable journal of finished work items (``events.jsonl``).

Why: a result only *counts* once it is on disk, so that ``kill -9`` (or a power cut) at any
moment loses no counted result and a rerun repeats no completed item. Each record is one JSON
line; :meth:`Journal.append` returns only after the line is written **and fsync'd**.

Why group commit: an fsync costs about a millisecond or more; fsyncing each result alone would
cap a run at a few hundred results per second. Results that finish while an fsync is in flight
are written together and covered by the next single fsync, so throughput scales with
concurrency while every caller still waits for durability of its own record.

Why a thread of its own: the write and fsync run off the event loop (a slow disk must not stall
the long polls), on one committer thread per journal fed through a ``SimpleQueue``; with few
results per batch (one rollout server: about 1.3 per fsync) ``asyncio.to_thread``'s executor and
future chaining cost about twice as much CPU per commit as this hand-off.

A torn last line (the process died mid-write) is ignored on load and cut off before the file
is appended to again. A complete line that is not a JSON object (a NUL-filled block after a
power cut, invalid UTF-8, a stray edit) is skipped too and counted (:func:`count_unreadable`),
so the resume reports it and the item it held simply runs again. For one work item the *last* record wins (``--retry-failed`` appends a
new attempt after a failed one).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
        record = json.loads(line.decode("utf-8"))  # a NUL or invalid UTF-8: ValueError
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


def _truncate_torn_tail(path: Path) -> None:
    """Cut a partial last line so the next append starts on a fresh line."""
    if not path.exists():
        return
    with path.open("rb+") as fh:
        data = fh.read()
        if not data or data.endswith(b"\n"):
            return
        cut = data.rfind(b"\n") + 1
        fh.truncate(cut)
        fh.flush()
        os.fsync(fh.fileno())


class Journal:
    """Append-only, fsync'd, group-committed JSON-lines file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        _truncate_torn_tail(path)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._pending: list[tuple[bytes, asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._closed = False
        self._commits: queue.SimpleQueue[tuple[bytes, asyncio.Future[None]] | None] | None = None
        self._committer_thread: threading.Thread | None = None

    async def append(self, record: dict[str, Any]) -> None:
        """Write ``record`` and return once it is durable (fsync'd)."""
        if self._closed:
            raise RuntimeError("journal is closed")
        line = (json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n").encode()
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((line, future))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_loop())
        # The batch is written by the flusher task whatever happens to this caller: a cancelled
        # caller only cancels its own future (skipped by the flusher), never the batch.
        await future

    def append_sync(self, record: dict[str, Any]) -> None:
        """Blocking variant for code outside an event loop."""
        line = (json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n").encode()
        self._write_and_sync(line)

    async def _flush_loop(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            data = b"".join(line for line, _ in batch)
            try:
                await self._commit(data)
            except BaseException as exc:  # disk full, I/O error: every waiter must learn it
                for _, future in batch:
                    if not future.done():
                        future.set_exception(
                            exc if isinstance(exc, Exception) else OSError(str(exc))
                        )
                if not isinstance(exc, Exception):
                    raise
                continue
            for _, future in batch:
                if not future.done():
                    future.set_result(None)

    def _commit(self, data: bytes) -> asyncio.Future[None]:
        """Hand ``data`` to the committer thread (started on first use); the future resolves
        once it is written and fsync'd, or fails with the write's error."""
        if self._commits is None:
            self._commits = queue.SimpleQueue()
            self._committer_thread = threading.Thread(
                target=self._committer,
                args=(self._commits, asyncio.get_running_loop()),
                name=f"osmosis-journal-{self.path.name}",
                daemon=True,
            )
            self._committer_thread.start()
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._commits.put((data, done))
        return done

    def _committer(
        self,
        commits: queue.SimpleQueue[tuple[bytes, asyncio.Future[None]] | None],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        """The committer thread: one batch at a time until the ``None`` that :meth:`close`
        sends."""
        while (item := commits.get()) is not None:
            data, done = item
            try:
                self._write_and_sync(data)
            except BaseException as exc:  # delivered to the waiting flusher, never lost
                outcome: BaseException | None = exc
            else:
                outcome = None
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
                loop.call_soon_threadsafe(_settle, done, outcome)

    def _write_and_sync(self, data: bytes) -> None:
        """Append ``data`` and fsync; on failure (a full disk) cut what was written back off, so
        no partial line is left for later appends to follow, and name the file in the error."""
        start = os.fstat(self._fd).st_size
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            os.fsync(self._fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, start)
            if exc.filename is not None:
                raise
            raise OSError(exc.errno, exc.strerror, str(self.path)) from exc

    async def aclose(self) -> None:
        """Wait for pending commits, then close the file."""
        if self._flusher is not None:
            await asyncio.shield(self._flusher)
        self.close()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._commits is not None and self._committer_thread is not None:
                self._commits.put(None)  # the thread ends after any batch it is writing,
                self._committer_thread.join()  # which must not find its file closed under it
            os.close(self._fd)


def _settle(done: asyncio.Future[None], outcome: BaseException | None) -> None:
    """On the loop: resolve a commit's future (unless its waiter is gone)."""
    if done.done():
        return
    if outcome is None:
        done.set_result(None)
    else:
        done.set_exception(outcome)
