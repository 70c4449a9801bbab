"""``GroupSync`` on real threads and a real file synced with a real ``fdatasync``.

No assertion is about time: the tests synchronise on events the sync callable sets, and an
interval of an hour makes "the next sync waits for the window" certain rather than likely.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from osmosis_ai._util.group_sync import GroupSync

HOUR = 3600.0


class _File:
    """A real file; :meth:`sync` is the callable under test: a real ``fdatasync`` that records
    the file size it covered and the thread it ran on. :attr:`gate` holds a sync before it
    starts (when cleared); :attr:`entered` counts syncs that have started."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.synced_sizes: list[int] = []
        self.threads: list[str] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Semaphore(0)
        self.fail_next: list[BaseException] = []

    def write(self, data: bytes = b"x\n") -> None:
        os.write(self.fd, data)

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def sync(self) -> None:
        self.threads.append(threading.current_thread().name)
        self.entered.release()
        assert self.gate.wait(30)
        if self.fail_next:
            raise self.fail_next.pop(0)
        size = self.size()
        os.fdatasync(self.fd)
        self.synced_sizes.append(size)

    def wait_entered(self, n: int = 1) -> None:
        for _ in range(n):
            assert self.entered.acquire(timeout=30), "the sync thread did not run"


@pytest.fixture
def file(tmp_path: Path) -> Iterator[_File]:
    f = _File(tmp_path / "journal.jsonl")
    yield f
    f.gate.set()
    os.close(f.fd)


def _alive(name: str) -> bool:
    return any(t.name == name for t in threading.enumerate())


STOPPER = "test-sync-stopper"


def _stop(syncer: GroupSync) -> None:
    """``syncer.stop()`` on a thread named :data:`STOPPER`, so that a lost wake fails the test
    instead of hanging it; the exception of ``stop`` is raised here."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            syncer.stop()
        except BaseException as exc:
            errors.append(exc)

    stopper = threading.Thread(target=run, name=STOPPER)
    stopper.start()
    stopper.join(30)
    assert not stopper.is_alive(), "stop() did not return"
    if errors:
        raise errors[0]


def test_no_thread_until_the_first_wake_and_none_after_stop(file: _File) -> None:
    syncer = GroupSync(file.sync, name="test-sync-lazy", interval=HOUR)
    assert not _alive("test-sync-lazy")
    file.write()
    syncer.wake()
    file.wait_entered()
    assert file.threads == ["test-sync-lazy"]  # the sync ran on the named thread
    assert [t.daemon for t in threading.enumerate() if t.name == "test-sync-lazy"] == [True]
    _stop(syncer)
    assert not _alive("test-sync-lazy")


def test_a_write_before_stop_is_synced_when_stop_returns(file: _File) -> None:
    """The first wake syncs at once; a write inside the (hour-long) window is left to ``stop``,
    which ends the thread without waiting out the window and syncs it on the caller's thread."""
    syncer = GroupSync(file.sync, name="test-sync-stop", interval=HOUR)
    file.write()
    syncer.wake()
    file.wait_entered()
    file.write(b"after the first sync\n")
    syncer.wake()
    _stop(syncer)
    assert file.synced_sizes[-1] == file.size()
    assert file.threads == ["test-sync-stop", STOPPER]


def test_stop_without_a_wake_still_syncs_once_and_starts_no_thread(file: _File) -> None:
    syncer = GroupSync(file.sync, name="test-sync-idle")
    file.write()
    _stop(syncer)
    assert file.synced_sizes == [file.size()]
    assert file.threads == [STOPPER]
    syncer.wake()  # after stop: no thread, no sync
    syncer.start()
    assert not _alive("test-sync-idle")
    assert len(file.synced_sizes) == 1


def test_wakes_during_a_sync_share_the_next_one(file: _File) -> None:
    """Ten writes (and wakes) while a sync is held cost one more background sync, which covers
    all of them; with no interval to wait out, the grouping is the sync itself."""
    syncer = GroupSync(file.sync, name="test-sync-group", interval=0.0)
    file.gate.clear()
    file.write()
    syncer.wake()
    file.wait_entered()  # the first sync started (and is held) before the writes below
    for _ in range(10):
        file.write()
        syncer.wake()
    size = file.size()
    file.gate.set()
    file.wait_entered()  # the second background sync
    _stop(syncer)
    assert len(file.synced_sizes) == 3  # two on the thread, one by stop: 11 wakes
    assert file.synced_sizes[1] == size
    assert file.threads[:2] == ["test-sync-group", "test-sync-group"]


def test_wakes_within_the_interval_coalesce(file: _File) -> None:
    """After a sync, wakes inside the window do not sync again: 20 wakes, 2 syncs (the first
    and the one ``stop`` makes), and the last covers every write."""
    syncer = GroupSync(file.sync, name="test-sync-window", interval=HOUR)
    for i in range(20):
        file.write()
        syncer.wake()
        if i == 0:
            file.wait_entered()
    _stop(syncer)
    assert len(file.synced_sizes) == 2
    assert file.synced_sizes[-1] == file.size()


def test_an_exception_in_the_thread_is_logged_and_the_thread_keeps_syncing(
    file: _File, caplog: pytest.LogCaptureFixture
) -> None:
    syncer = GroupSync(file.sync, name="test-sync-error", interval=0.0)
    file.fail_next.append(RuntimeError("disk on fire"))
    with caplog.at_level(logging.ERROR, logger="osmosis_ai._util.group_sync"):
        file.write()
        syncer.wake()
        file.wait_entered()
        file.write()
        syncer.wake()  # the thread survived the error: this wake syncs on it
        file.wait_entered()
        assert _alive("test-sync-error")
        _stop(syncer)
    errors = [r for r in caplog.records if r.name == "osmosis_ai._util.group_sync"]
    assert len(errors) == 1
    assert "test-sync-error" in errors[0].getMessage()
    assert errors[0].exc_info is not None
    assert "disk on fire" in str(errors[0].exc_info[1])
    assert file.synced_sizes[-1] == file.size()


def test_an_exception_of_the_sync_made_by_stop_propagates(file: _File) -> None:
    syncer = GroupSync(file.sync, name="test-sync-stop-error", interval=HOUR)
    file.write()
    syncer.wake()
    file.wait_entered()
    file.fail_next.append(OSError(5, "Input/output error"))
    with pytest.raises(OSError, match="Input/output error"):
        _stop(syncer)
    assert not _alive("test-sync-stop-error")
