from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path

import pytest

from osmosis_ai.eval._journal import Journal, count_unreadable, iter_records, load_latest


def _record(row: int, run: int = 0, status: str = "success") -> dict[str, object]:
    return {"row_index": row, "run_index": run, "status": status, "reward": 1.0}


async def test_append_returns_after_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    journal = Journal(tmp_path / "events.jsonl")
    await journal.append(_record(0))
    assert synced, "append returned before the record was fsync'd"
    assert list(iter_records(journal.path)) == [_record(0)]
    await journal.aclose()


async def test_concurrent_appends_are_group_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real_fsync(fd))[1])
    journal = Journal(tmp_path / "events.jsonl")
    await asyncio.gather(*(journal.append(_record(i)) for i in range(200)))
    await journal.aclose()
    assert len(load_latest(journal.path)) == 200
    assert len(calls) < 200  # batched: far fewer fsyncs than records


class _BlockedFsync:
    """``os.fsync`` held until :attr:`release` is set; :attr:`entered` once a commit is inside
    it, :attr:`threads` the threads that called it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.release, self.entered = threading.Event(), threading.Event()
        self.threads: list[str] = []
        real_fsync = os.fsync

        def slow_fsync(fd: int) -> None:
            self.threads.append(threading.current_thread().name)
            self.entered.set()
            self.release.wait(30)
            real_fsync(fd)

        monkeypatch.setattr(os, "fsync", slow_fsync)


async def test_a_slow_fsync_runs_off_the_loop_and_the_committer_thread_ends_on_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fsync runs on the journal's own thread: the loop keeps serving while the disk is
    slow, the append waits for the fsync, and closing the journal ends that thread."""
    fsync = _BlockedFsync(monkeypatch)
    journal = Journal(tmp_path / "events.jsonl")
    append = asyncio.create_task(journal.append(_record(0)))
    # The loop keeps running (this await needs it) while the committer thread is inside fsync.
    assert await asyncio.to_thread(fsync.entered.wait, 30)
    assert fsync.threads == ["osmosis-journal-events.jsonl"]
    assert not append.done()
    fsync.release.set()
    await append
    assert list(iter_records(journal.path)) == [_record(0)]
    thread = next(t for t in threading.enumerate() if t.name == fsync.threads[0])
    await journal.aclose()
    thread.join(30)
    assert not thread.is_alive()


async def test_closing_waits_for_the_commit_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``close()`` while a batch is being fsync'd waits for that commit instead of closing the
    file under the committer thread (whose fsync would then fail, or hit a reused descriptor)."""
    fsync = _BlockedFsync(monkeypatch)
    journal = Journal(tmp_path / "events.jsonl")
    append = asyncio.create_task(journal.append(_record(0)))
    assert await asyncio.to_thread(fsync.entered.wait, 30)
    threading.Timer(0.2, fsync.release.set).start()
    await asyncio.to_thread(journal.close)  # returns once the commit in flight has finished
    await append  # durable, not failed with EBADF
    assert list(iter_records(journal.path)) == [_record(0)]


async def test_a_failed_write_reaches_every_waiter_and_the_journal_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error on the committer thread (a full disk) fails the batch's appends, leaves no
    partial line, and later appends still commit."""
    real_fsync = os.fsync
    failing = [True]

    def fsync(fd: int) -> None:
        if failing[0]:
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    journal = Journal(tmp_path / "events.jsonl")
    outcomes = await asyncio.gather(
        *(journal.append(_record(i)) for i in range(3)), return_exceptions=True
    )
    assert all(isinstance(o, OSError) and str(journal.path) in str(o) for o in outcomes)
    assert journal.path.read_bytes() == b""
    failing[0] = False
    await journal.append(_record(3))
    await journal.aclose()
    assert [r["row_index"] for r in iter_records(journal.path)] == [3]


async def test_a_cancelled_append_still_commits_its_batch(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "events.jsonl")
    first = asyncio.create_task(journal.append(_record(0)))
    second = asyncio.create_task(journal.append(_record(1)))
    await asyncio.sleep(0)  # both queued; the flusher has taken the batch
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    await second
    await journal.append(_record(2))
    await journal.aclose()
    assert [r["row_index"] for r in iter_records(journal.path)] == [0, 1, 2]


async def test_torn_tail_is_ignored_and_cut_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(_record(0)) + "\n" + '{"row_index": 1, "run_ind')
    assert list(load_latest(path)) == [(0, 0)]
    journal = Journal(path)
    await journal.append(_record(2))
    await journal.aclose()
    assert sorted(load_latest(path)) == [(0, 0), (2, 0)]
    assert path.read_text().count("\n") == 2


def test_latest_record_wins(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "events.jsonl")
    journal.append_sync(_record(0, status="failed"))
    journal.append_sync(_record(0, status="success"))
    journal.close()
    assert load_latest(journal.path)[(0, 0)]["status"] == "success"


async def test_closed_journal_refuses(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "events.jsonl")
    journal.close()
    with pytest.raises(RuntimeError, match="closed"):
        await journal.append(_record(0))


async def test_nul_and_invalid_utf8_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    good = json.dumps(_record(0)).encode() + b"\n"
    path.write_bytes(good + b"\x00" * 40 + b"\n" + b'{"row_index": 1, "x": "\xff\xfe"}\n' + good)
    assert list(load_latest(path)) == [(0, 0)]
    assert count_unreadable(path) == 2
    journal = Journal(path)  # a resume appends after them
    await journal.append(_record(1))
    await journal.aclose()
    assert sorted(load_latest(path)) == [(0, 0), (1, 0)]
