from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from osmosis_ai.eval._impl.run_dir import journal as journal_module
from osmosis_ai.eval._impl.run_dir.journal import (
    Journal,
    LatestRecords,
    append_offset,
    count_unreadable,
    iter_records,
    load_latest,
)


def _record(row: int, run: int = 0, status: str = "success") -> dict[str, object]:
    return {"row_index": row, "run_index": run, "status": status, "reward": 1.0}


class _BlockedSync:
    """``os.fdatasync`` held until :attr:`release` is set; :attr:`entered` once a sync is inside
    it; :attr:`calls` the file size at each call, :attr:`threads` the threads that called it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, blocked: bool = True) -> None:
        self.release, self.entered = threading.Event(), threading.Event()
        if not blocked:
            self.release.set()
        self.calls: list[int] = []
        self.threads: list[str] = []
        real_fdatasync = os.fdatasync

        def fdatasync(fd: int) -> None:
            self.calls.append(os.fstat(fd).st_size)
            self.threads.append(threading.current_thread().name)
            self.entered.set()
            self.release.wait(30)
            real_fdatasync(fd)

        monkeypatch.setattr(os, "fdatasync", fdatasync)


async def test_an_append_is_in_the_file_when_it_returns_without_waiting_for_a_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record is written (another reader sees it, a killed process cannot undo it) before
    ``append`` returns, while the background sync is stuck: nobody waits for the disk."""
    sync = _BlockedSync(monkeypatch)
    journal = Journal(tmp_path / "events.jsonl")
    await journal.append(_record(0))
    assert list(iter_records(journal.path)) == [_record(0)]
    assert await asyncio.to_thread(sync.entered.wait, 30)  # the syncer is inside fdatasync
    assert sync.threads == ["osmosis-journal-events.jsonl"]
    await journal.append(_record(1))  # returns although the sync has not finished
    assert [r["row_index"] for r in iter_records(journal.path)] == [0, 1]
    sync.release.set()
    await journal.aclose()
    assert not any(t.name == sync.threads[0] for t in threading.enumerate())


async def test_syncs_are_grouped_and_close_syncs_the_last_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records written while a sync runs share the next one: 200 appends during one sync cost
    at most one more, and ``close`` syncs after the last write."""
    sync = _BlockedSync(monkeypatch)
    journal = Journal(tmp_path / "events.jsonl")
    await journal.append(_record(0))
    assert await asyncio.to_thread(sync.entered.wait, 30)
    for i in range(1, 201):
        await journal.append(_record(i))
    sync.release.set()
    await journal.aclose()
    assert len(load_latest(journal.path)) == 201
    assert 2 <= len(sync.calls) <= 3  # the blocked one, perhaps one more, the one on close
    assert sync.calls[-1] == journal.path.stat().st_size


def test_a_killed_process_loses_no_appended_record(tmp_path: Path) -> None:
    """``kill -9`` right after the appends returned: every record is in the file."""
    path = tmp_path / "events.jsonl"
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_CHILD, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "appended\n"
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    assert sorted(load_latest(path)) == [(i, 0) for i in range(50)]


_KILLED_CHILD = """
import asyncio, sys, time
from pathlib import Path
from osmosis_ai.eval._impl.run_dir.journal import Journal

async def main():
    journal = Journal(Path(sys.argv[1]))
    for i in range(50):
        await journal.append({"row_index": i, "run_index": 0, "status": "success"})
    print("appended", flush=True)
    time.sleep(60)

asyncio.run(main())
"""


async def test_a_failed_write_fails_its_append_and_the_journal_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that fails (a full disk) fails its append naming the file, leaves no partial
    line, and later appends still go in."""
    real_write = os.write
    failing = [True]

    def write(fd: int, data: bytes) -> int:
        if failing[0]:
            real_write(fd, bytes(data[:5]))  # a torn start, as a write running out of space
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    journal = Journal(tmp_path / "events.jsonl")
    monkeypatch.setattr(os, "write", write)
    with pytest.raises(OSError, match="No space left") as caught:
        await journal.append(_record(0))
    assert str(journal.path) in str(caught.value)
    assert journal.path.read_bytes() == b""
    failing[0] = False
    await journal.append(_record(1))
    await journal.aclose()
    assert [r["row_index"] for r in iter_records(journal.path)] == [1]


async def test_a_failed_background_sync_is_raised_by_the_next_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An I/O error of the background sync stops the run at the next append (naming the file),
    as a failed write does."""
    failed = threading.Event()

    def fdatasync(fd: int) -> None:
        failed.set()
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", fdatasync)
    journal = Journal(tmp_path / "events.jsonl")
    await journal.append(_record(0))
    assert await asyncio.to_thread(failed.wait, 30)
    error: OSError | None = None
    for i in range(1, 3000):  # the syncer notes its error right after the failed call
        try:
            await journal.append(_record(i))
        except OSError as exc:
            error = exc
            break
        await asyncio.sleep(0.01)
    assert error is not None
    assert "Input/output error" in str(error)
    assert str(journal.path) in str(error)
    with pytest.raises(OSError, match="Input/output error"):
        journal.close()  # the sync on close fails too, and says so


async def test_torn_tail_is_ignored_and_cut_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(_record(0)) + "\n" + '{"row_index": 1, "run_ind')
    assert list(load_latest(path)) == [(0, 0)]
    journal = Journal(path)
    await journal.append(_record(2))
    await journal.aclose()
    assert sorted(load_latest(path)) == [(0, 0), (2, 0)]
    assert path.read_text().count("\n") == 2


@pytest.mark.parametrize("chunk", [4, 1 << 16])
def test_append_offset_cuts_a_torn_tail_reading_back_from_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Where a session's first record will go: the size once a torn last line is cut (the
    line break found reading back from the end, in chunks smaller or larger than the line)."""
    monkeypatch.setattr(journal_module, "_TAIL_CHUNK", chunk)
    path = tmp_path / "events.jsonl"
    assert append_offset(path) == 0  # no journal yet
    whole = json.dumps(_record(0)) + "\n"
    path.write_text(whole + '{"row_index": 1, "run_index": 0, "sta')
    assert append_offset(path) == len(whole)
    assert path.read_text() == whole
    assert append_offset(path) == len(whole)  # nothing torn: nothing cut
    path.write_text('{"row_index": 1, "run_ind')  # no complete line at all
    assert append_offset(path) == 0
    assert path.read_bytes() == b""
    journal = Journal(path)
    journal.append_sync(_record(3))
    journal.close()
    with LatestRecords(path, lambda key: 0 if key == (3, 0) else None, 1) as latest:
        assert latest.offset(0) == 0  # the first record a session appends starts there


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


def test_latest_records_finds_what_load_latest_holds(tmp_path: Path) -> None:
    """One pass notes where each work item's latest record is (planned items by position, the
    others by key); reading them back gives load_latest's records, torn and corrupt lines
    skipped as it skips them."""
    path = tmp_path / "events.jsonl"
    lines = [
        _record(0, 1, status="failed"),
        _record(1, 0),
        _record(0, 1, status="success"),
        {**_record(0, 0), "code_digest": "abc"},
        _record(7, 0),  # outside the plan (2 rows x n=2)
    ]
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in lines) + b"\x00\n{torn")
    expected = load_latest(path)

    def position(key: tuple[int, int]) -> int | None:
        return key[0] * 2 + key[1] if key[0] < 2 and key[1] < 2 else None

    with LatestRecords(path, position, 4) as latest:
        assert list(latest.positions()) == [0, 1, 2]
        found: dict[Any, dict[str, Any] | None] = {
            (r["row_index"], r["run_index"]): r for r in map(latest.at, latest.positions()) if r
        }
        found.update({key: latest.outside_record(key) for key in latest.outside})
        assert latest.at(3) is None  # (1, 1) never finished
        assert "code_digest" in latest.keys_seen
    assert found == expected
    record = found[(0, 1)]
    assert record is not None
    assert record["status"] == "success"
    with LatestRecords(tmp_path / "missing.jsonl", position, 4) as nothing:
        assert list(nothing.positions()) == []
