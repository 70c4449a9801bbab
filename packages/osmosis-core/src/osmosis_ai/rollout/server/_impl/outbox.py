"""The server's outbox: an append-only journal that makes admissions and results crash-safe.

Every admission, finished result and acknowledgement is appended to ``<outbox>/journal.jsonl``
as it happens, so it survives the process dying (``kill -9``, an OOM kill) at once:

* an admission is written before its 202 is sent: at the end of the event-loop turn it was
  admitted in, in one ``write`` with everything else recorded in that turn; the 202 waits for
  it (:meth:`Outbox.written`: that write runs first thing in the next turn, so the 202 usually
  goes out in that same turn; :meth:`Outbox.write_now` writes at once); a rollout whose task
  finished before that write (its first step runs first) is written once, as its result;
* a finished result is written at the end of the event-loop turn in which it finished, in one
  ``write`` with everything else recorded in that turn (:meth:`Outbox.put`), so before
  anything about it leaves the server: callbacks are sent in later turns, and a long poll
  that takes the result in that same turn acknowledges it there (its line is never built);
* an acknowledgement goes with the next write, at the latest :data:`SYNC_INTERVAL_SEC` later
  (one lost in a crash only means the result is offered, or its callbacks sent, once more).

A background thread makes the writes durable against a machine crash with one ``fdatasync``
at most every :data:`SYNC_INTERVAL_SEC` (group commit: everything written in that window shares
it; an idle server does not wake up).

Records (one JSON object per line; ``op`` says which):

* ``admit`` - rollout id, lease digest and salt, request fingerprint (no request body);
* ``done`` - a finished result as the next start needs it (see :func:`.retention.done_line`:
  the result's wire bytes are embedded as they are, last, after their length ``rlen``);
* ``ack`` - the result was fetched, its callbacks acknowledged, or it was forgotten.

At start the journal is replayed, streamed line by line (memory for the live records only): an
acknowledged rollout is gone, a finished one is offered again (fetchable with the lease token
the controller holds, callbacks re-sent), an admitted one that never finished becomes a
terminal failure (the service decides which). A torn last line is cut off and the server
appends to the same file, so a restart needs no free disk for a second copy and a crash during
it loses nothing. The writer compacts (temporary file + rename) when the file grows past four
times its live records; a compaction that fails (a full disk) is retried at the next one.
An unreadable line (torn, corrupt, nested deeper than :data:`~osmosis_ai._util.json_bounded.
MAX_DEPTH`) is skipped and counted in the log.

A write that fails (a full disk) is cut back to the last whole line and kept: it is written
again, before anything newer, at the next write or at the latest :data:`RETRY_WRITE_SEC`
later; meanwhile :attr:`Outbox.failed` is true and ``/health`` reports the journal as
``degraded``. Leftover temporary files of a compaction killed midway are removed at start.

Identity: ``identity.json`` names the backend the outbox belongs to (the user's backend class,
whatever the worker count). A server refuses an outbox that names another backend
(:class:`OutboxForeign`); the default folder is named by the backend, the working directory
and the listening port when ``serve()`` knows it, so a restart finds its own outbox after a
change of worker count and two servers side by side restart in any order.

The directory is locked (``flock``) by the server that uses it, so two servers never share one.
Only SHA-256 digests of lease tokens are stored; a callback record keeps the controller's bearer
key to re-send with it, so the directory is 0700 and the files 0600.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Coroutine
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any

from osmosis_ai._util import json_bounded
from osmosis_ai._util.append_only import append_whole, write_all
from osmosis_ai._util.group_sync import SYNC_INTERVAL_SEC, GroupSync
from osmosis_ai._util.redaction import file_redactor, redact_file_data
from osmosis_ai.atomic_file import move_into_place, sync_folder, write_atomic

logger = logging.getLogger("osmosis_ai.rollout.server")

JOURNAL_NAME = "journal.jsonl"
KEY_NAME = "lease.key"
LOCK_NAME = "lock"
IDENTITY_NAME = "identity.json"
#: A write that failed is tried again at the latest this many seconds later.
RETRY_WRITE_SEC = 1.0
_COMPACT_MIN_BYTES = 4 * 1024 * 1024

# What :meth:`Outbox.put` takes: the line, ``None`` (an acknowledgement), or a function giving
# the line (or ``None``) when the turn's records are written.
Line = bytes | Callable[[], bytes | None] | None
_ABSENT: Any = object()


class OutboxLocked(OSError):
    """Another live server holds this outbox directory."""


class OutboxForeign(OSError):
    """The outbox directory belongs to a server of another backend."""


class Outbox:
    """One server's journal. :meth:`open` and :meth:`close` block (call them in a thread);
    :meth:`put`, :meth:`write_now` and :meth:`flush` run on the event loop (the writer thread
    does the syncing)."""

    def __init__(self, directory: Path, *, backend: str | None = None) -> None:
        self.directory = directory
        #: The backend this outbox is for (``identity.json``); ``None`` checks nothing.
        self.backend = backend
        self.lease_key = b""
        self._lock = threading.Lock()  # writes (event loop) vs compaction (writer thread)
        # The writer thread: syncs (and compacts) after a write, at most every SYNC_INTERVAL_SEC.
        self._writer = GroupSync(self._sync, name="osmosis-outbox")
        self._dirty = False
        self._live: dict[str, bytes] = {}
        self._live_bytes = 0
        self._file_bytes = 0
        self._pending: dict[str, Line] = {}
        self._urgent = 0  # pending lines that are not acknowledgements
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._waiters: list[asyncio.Future[None]] = []  # answers waiting for the next write
        self._taken = 0  # batches of pending records taken for a write so far
        self._done = 0  # the last batch whose write has returned
        self._scheduled = False
        self._deferred = False
        self._fd = -1
        self._lock_fd = -1
        self.failed = False
        self.error = ""  # the last write failure while :attr:`failed`
        self._unwritten: list[bytes] = []  # records whose write failed, oldest first
        self._retrying = False

    # ---- start ------------------------------------------------------------------------

    def open(self) -> list[dict[str, Any]]:
        """Lock the directory, replay the journal, compact it; return the live records
        (``op`` ``done`` or ``admit``), oldest first."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock_fd = lock_directory(self.directory)
        try:
            self._check_identity()
        except OSError:
            os.close(self._lock_fd)
            self._lock_fd = -1
            raise
        _remove_stale_temporaries(self.directory)
        self.lease_key = self._load_key()
        journal = self.directory / JOURNAL_NAME
        records = replay(journal)
        self._live = {r["id"]: encode(r) for r in records}
        self._live_bytes = sum(len(line) for line in self._live.values())
        self._fd = os.open(journal, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        self._file_bytes = _cut_torn_tail(self._fd)
        self._writer.start()
        return records

    def _check_identity(self) -> None:
        """Refuse an outbox whose ``identity.json`` names another backend; name ours in a new
        one."""
        if self.backend is None:
            return
        path = self.directory / IDENTITY_NAME
        try:
            theirs = json_bounded.loads(path.read_bytes()).get("backend")
        except FileNotFoundError:
            theirs = None
        except (ValueError, AttributeError, OSError):
            theirs = None  # unreadable: rewritten below
        if theirs is not None and theirs != self.backend:
            raise OutboxForeign(
                f"the rollout outbox {self.directory} belongs to a server of backend {theirs!r}, "
                f"not {self.backend!r}; its results are not this server's. Give this server its "
                "own outbox_dir (or remove that folder if its results are no longer wanted)"
            )
        if theirs is None:
            data = json.dumps({"backend": self.backend, "cwd": os.getcwd()}).encode()
            write_atomic(path, data + b"\n", mode=0o600, durable=True)

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Write what :meth:`put` records at the end of the turn on ``loop`` (unbound, at once)."""
        self._loop = loop
        self._loop_thread = threading.get_ident()

    def _load_key(self) -> bytes:
        path = self.directory / KEY_NAME
        try:
            key = path.read_bytes()
            if len(key) == 32:
                return key
        except FileNotFoundError:
            pass
        key = os.urandom(32)
        write_atomic(path, key, mode=0o600, durable=True)
        return key

    # ---- writing ----------------------------------------------------------------------

    def put(self, rollout_id: str, line: Line) -> None:
        """Record ``rollout_id``'s new state for the end of this turn; a later state recorded in
        the same turn replaces it (a result fetched in the turn it finished costs only an
        acknowledgement, and its line is never built).

        ``None`` (acknowledged) is not urgent: it goes with the next write, at the latest
        :data:`SYNC_INTERVAL_SEC` later. Lost in a crash, it only means the result is offered
        (or its callbacks sent) once more after the restart."""
        pending = self._pending
        previous = pending.get(rollout_id, _ABSENT)
        pending[rollout_id] = line
        if previous is not None and previous is not _ABSENT:
            self._urgent -= 1
        if line is not None:
            self._urgent += 1
        loop = self._loop
        if loop is None:
            self.flush()
        elif not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._end_of_turn)

    def written(self) -> Coroutine[Any, Any, None] | None:
        """Something to await until what is urgent now (an admission, a result) has been
        written, at the end of this turn; ``None`` if nothing urgent is pending (or no loop is
        bound: then :meth:`put` has written it already).

        The write was scheduled (``call_soon``) before the caller first yields, so it has
        usually returned when the caller is resumed after one yield: no future, and the answer
        goes out in the turn of the write instead of the turn after it. Otherwise (the write
        was taken by another thread's :meth:`flush`) the caller waits for the next write with a
        future of its own, so cancelling one wait (a client gone) never cancels another's."""
        if not self._urgent or self._loop is None:
            return None
        return self._wait_written(self._taken + 1)

    async def _wait_written(self, batch: int) -> None:
        await asyncio.sleep(0)
        while self._done < batch:
            assert self._loop is not None
            waiter = self._loop.create_future()
            self._waiters.append(waiter)
            await waiter

    def write_now(self, rollout_id: str, line: bytes | None) -> None:
        """Record ``line`` and write it (with whatever is pending) before returning: an
        admission is on file before its 202 is sent."""
        self._pending[rollout_id] = line
        self.flush()

    def append(self, rollout_id: str, record: dict[str, Any] | None) -> None:
        """Write ``record`` (``None``: an acknowledgement) now."""
        self.write_now(rollout_id, None if record is None else encode(record))

    def _end_of_turn(self) -> None:
        self._scheduled = False
        if self._urgent:
            self.flush()
        elif self._pending and not self._deferred and self._loop is not None:
            self._deferred = True
            self._loop.call_later(SYNC_INTERVAL_SEC, self._deferred_flush)

    def _deferred_flush(self) -> None:
        self._deferred = False
        self.flush()

    def flush(self) -> None:
        """Write every pending record with one ``write``; it is synced within
        :data:`SYNC_INTERVAL_SEC`."""
        if not self._waiters:
            self._flush()
            return
        waiters, self._waiters = self._waiters, []
        try:
            self._flush()
        finally:  # released once the write has returned, whichever thread flushed
            self._release(waiters)

    def _flush(self) -> None:
        if (not self._pending and not self._unwritten) or self._fd < 0:
            return  # nothing to write, or closed (the server has stopped)
        with self._lock:
            pending, self._pending = self._pending, {}
            self._urgent = 0
            self._taken += 1
            batch = self._taken
            chunks, self._unwritten = self._unwritten, []  # a failed write goes first
            live = self._live
            for rollout_id, item in pending.items():
                line = item() if callable(item) else item
                old = live.pop(rollout_id, None)
                if old is not None:
                    self._live_bytes -= len(old)
                if line is None:
                    if old is None:
                        continue  # never written: nothing to take back
                    line = b'{"op":"ack","id":%s}\n' % encode_basestring_ascii(rollout_id).encode()
                else:
                    live[rollout_id] = line
                    self._live_bytes += len(line)
                chunks.append(line)
            if chunks:
                self._write(chunks[0] if len(chunks) == 1 else b"".join(chunks))
            self._done = batch  # returned (a failed write is logged, as for the waiters)

    def _release(self, waiters: list[asyncio.Future[None]]) -> None:
        """Release the answers that waited for a write (on the loop's thread)."""
        if threading.get_ident() != self._loop_thread and self._loop is not None:
            self._loop.call_soon_threadsafe(_release, waiters)
        else:
            _release(waiters)

    def _write(self, data: bytes) -> None:
        try:
            append_whole(self._fd, data, self._file_bytes)  # a failure leaves no torn line
        except OSError as exc:
            self._unwritten = [data]  # all of it, for the next write
            self._write_failed(exc)
            return
        if self.failed:
            logger.warning("the rollout outbox %s is written again", self.directory)
        self.failed = False
        self.error = ""
        self._file_bytes += len(data)
        if not self._dirty:
            self._dirty = True
            self._writer.wake()

    def _write_failed(self, exc: OSError) -> None:
        if not self.failed:
            logger.error(
                "could not write the rollout outbox %s (%s): results are not crash-safe until "
                "it can be written again (retried every %gs)",
                self.directory / JOURNAL_NAME,
                exc,
                RETRY_WRITE_SEC,
            )
        self.failed = True
        self.error = str(exc)
        loop = self._loop
        if self._unwritten and loop is not None and not self._retrying:
            self._retrying = True
            if threading.get_ident() == self._loop_thread:
                loop.call_later(RETRY_WRITE_SEC, self._retry)
            else:
                loop.call_soon_threadsafe(loop.call_later, RETRY_WRITE_SEC, self._retry)

    def _retry(self) -> None:
        self._retrying = False
        self.flush()

    @property
    def unwritten(self) -> int:
        """Bytes of records whose write failed and waits for a retry."""
        return sum(len(chunk) for chunk in self._unwritten)

    def _sync(self) -> None:
        """Sync what was written and compact the journal if it has grown (the writer thread at
        most every :data:`SYNC_INTERVAL_SEC`, and :meth:`close`)."""
        with self._lock:
            if not self._dirty:
                return
            self._dirty = False
            fd = self._fd
            compact = self._file_bytes > max(_COMPACT_MIN_BYTES, 4 * self._live_bytes)
        try:
            os.fdatasync(fd)
        except OSError as exc:
            self._write_failed(exc)
        if compact:
            try:
                self._compact()
            except OSError as exc:
                logger.error("could not compact the rollout outbox: %s", exc)

    def _compact(self) -> None:
        """Replace the journal with its live records (the writer thread; never while a failed
        write waits to be retried).

        The lock is held only to take the live records and, at the end, to carry over what was
        appended meanwhile and rename: writing and syncing the copy (seconds on a busy disk)
        happen while the event loop goes on writing to the old journal, which it does under
        this lock, so a compaction never stops the loop for longer than a rename."""
        journal = self.directory / JOURNAL_NAME
        with self._lock:
            if self._unwritten or self._fd < 0:
                return
            data = redact_file_data(
                file_redactor(os.fspath(journal)), b"".join(self._live.values())
            )
            mark, old_fd = self._file_bytes, self._fd
        tmp = journal.with_name(f".{JOURNAL_NAME}.compact.tmp")  # removed at start if left
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        try:
            write_all(fd, data)
            os.fsync(fd)
            with self._lock:
                if self._unwritten or self._fd != old_fd:
                    raise _Abandoned  # a write failed meanwhile, or closed: next time
                later = _read_range(old_fd, mark, self._file_bytes)
                write_all(fd, later)
                move_into_place(tmp, journal)  # its folder is synced below, unlocked
                os.close(old_fd)
                self._fd, fd = fd, -1
                self._file_bytes = len(data) + len(later)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if not isinstance(exc, _Abandoned):
                raise
        finally:
            if fd >= 0:
                os.close(fd)
        if fd < 0:
            with contextlib.suppress(OSError):
                os.fsync(self._fd)
            sync_folder(self.directory)  # the rename survives a power cut

    # ---- stop -------------------------------------------------------------------------

    def close(self) -> None:
        """Write and sync what is pending, stop the writer and release the directory."""
        self.flush()
        self._writer.stop()  # ends the writer thread, then syncs (and compacts) what is left
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = -1


class _Abandoned(Exception):
    """A compaction given up (the journal changed under it in a way it cannot carry over)."""


def _read_range(fd: int, start: int, end: int) -> bytes:
    """Bytes ``start:end`` of the journal open as ``fd`` (what was appended since a mark)."""
    chunks: list[bytes] = []
    while start < end:
        chunk = os.pread(fd, end - start, start)
        if not chunk:
            raise OSError("the rollout outbox journal is shorter than what was written to it")
        chunks.append(chunk)
        start += len(chunk)
    return b"".join(chunks)


def _release(waiters: list[asyncio.Future[None]]) -> None:
    for waiter in waiters:
        if not waiter.done():
            waiter.set_result(None)


def encode(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def replay(journal: Path) -> list[dict[str, Any]]:
    """The live records of ``journal`` in order (a torn or corrupt line is skipped and logged)."""
    try:
        handle = journal.open("rb")
    except FileNotFoundError:
        return []
    live: dict[str, dict[str, Any]] = {}
    skipped = 0
    with handle:
        for line in handle:  # streamed: the file may be larger than the free memory or disk
            if line.strip():
                skipped += _replay_line(line.rstrip(b"\n"), live)
    if skipped:
        logger.error("skipped %d unreadable record(s) in the rollout outbox %s", skipped, journal)
    return list(live.values())


def _replay_line(line: bytes, live: dict[str, dict[str, Any]]) -> int:
    """Apply one journal line to ``live``; 1 if it was unreadable (skipped), else 0."""
    try:
        record = json_bounded.loads(line)
        op, rollout_id = record["op"], record["id"]
        if not isinstance(rollout_id, str) or op not in ("admit", "done", "ack"):
            raise ValueError(op)
        if "rlen" in record:
            record["result"] = _embedded_result(line, record.pop("rlen"))
    except (ValueError, KeyError, TypeError):
        return 1
    live.pop(rollout_id, None)
    if op != "ack":
        live[rollout_id] = record
    return 0


def _cut_torn_tail(fd: int) -> int:
    """Cut a last line the process died writing (no newline) so the next append starts a
    line; return the file's size. Reads backwards from the end: no copy, no space needed."""
    size = os.fstat(fd).st_size
    end = size
    while end > 0:
        start = max(end - 65536, 0)
        chunk = os.pread(fd, end - start, start)
        if end == size and chunk.endswith(b"\n"):
            return size
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            end = start + newline + 1
            break
        end = start
    os.ftruncate(fd, end)
    return end


def _remove_stale_temporaries(directory: Path) -> None:
    """Temporary files of a write killed midway (``write_atomic``'s ``.<name>.*.tmp``)."""
    for stale in directory.glob(".*.tmp"):
        with contextlib.suppress(OSError):
            stale.unlink()


def _embedded_result(line: bytes, length: Any) -> str:
    """The wire bytes of a ``done`` line's result, exactly as written (the line's last member,
    ``"result":``, holds ``length`` bytes)."""
    end = len(line) - 1
    if not isinstance(length, int) or line[end - length - 10 : end - length] != b',"result":':
        raise ValueError("rlen")
    return line[end - length : end].decode()


def lock_directory(directory: Path) -> int:
    """Take an exclusive ``flock`` on ``directory/lock`` (released when the fd closes)."""
    from osmosis_ai._util.file_lock import try_lock

    fd = try_lock(directory / LOCK_NAME)
    if fd is None:
        raise OutboxLocked(
            f"the rollout outbox {directory} is in use by another running server; give each "
            "server its own outbox_dir"
        )
    return fd


def outbox_label(backend: object) -> str:
    """The backend an outbox belongs to: the user's backend class, also when worker processes
    run it (the protocol process then holds a pool wrapping it as ``template``)."""
    template = getattr(backend, "template", None)
    chosen = (
        template if template is not None and type(backend).__name__ == "WorkerPool" else backend
    )
    return type(chosen).__name__


def default_outbox_dir(root: Path, backend_name: str, instance: str | None = None) -> Path:
    """``<root>/<backend>-<hash of the working directory>-<instance>`` when the server knows
    its instance (its port), else ``-<n>``: the first such folder no running server holds. So a
    restarted server finds its own outbox (whatever its worker count) and two servers started
    side by side never share one."""
    key = hashlib.sha256(os.getcwd().encode("utf-8", "surrogatepass")).hexdigest()[:12]
    safe = "".join(c if c.isascii() and c.isalnum() else "_" for c in backend_name)[:32]
    if instance:
        tag = "".join(c if c.isascii() and c.isalnum() else "_" for c in instance)[:32]
        return root / f"{safe}-{key}-{tag}"
    n = 0
    while True:
        candidate = root / f"{safe}-{key}-{n}"
        if not is_locked(candidate):
            return candidate
        n += 1


def is_locked(directory: Path) -> bool:
    """Whether a running server holds the outbox in ``directory`` (an unreadable lock file
    counts as free: opening the outbox then says what is wrong)."""
    from osmosis_ai._util.file_lock import is_locked as lock_held

    try:
        return lock_held(directory / LOCK_NAME)
    except OSError:
        return False
