"""The outbox under faults (issue 39, items 2, 3, 4 and 7): its identity survives a change of
worker count and a restart in another order, a foreign folder is refused by name, a restart
needs no free disk for a second copy, records whose write failed are written later while
``/health`` reports a degraded journal, and an over-deep journal line is skipped."""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from osmosis_ai.rollout.server import create_rollout_server
from osmosis_ai.rollout.server._impl import outbox as outbox_module
from osmosis_ai.rollout.server._impl.outbox import (
    JOURNAL_NAME,
    Outbox,
    OutboxForeign,
    default_outbox_dir,
    outbox_label,
    replay,
)
from osmosis_ai.rollout.server._impl.service import RolloutService
from osmosis_ai.testing import serve_app

from .rollout_server_harness import FakeBackend, body, final_result, running


@asynccontextmanager
async def instance(
    name: str, backend: FakeBackend | None = None
) -> AsyncIterator[tuple[httpx.AsyncClient, RolloutService]]:
    """A server with the default outbox, as ``serve(app, port=...)`` names it."""
    app = create_rollout_server(backend=backend or FakeBackend(), configure_logging=False)
    service: RolloutService = app.state.rollout_service
    service.outbox_instance = name
    async with serve_app(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as client:
        yield client, service


async def _admitted(client: httpx.AsyncClient, rid: str) -> str:
    """Admit ``rid`` held running (its gate releases it); return its lease token."""
    response = await client.post("/rollout", json=body(rid, metadata={"mode": "block"}))
    assert response.status_code == 202, response.text
    return response.json()["polling_lease_token"]


def test_the_outbox_belongs_to_the_users_backend_whatever_the_worker_count(tmp_path: Path) -> None:
    from osmosis_ai.rollout.server._impl.workers.pool import WorkerPool

    template = FakeBackend()
    pool = WorkerPool(template, 2, {})
    assert outbox_label(pool) == outbox_label(template) == "FakeBackend"
    root = tmp_path / "outboxes"
    assert default_outbox_dir(root, outbox_label(pool), "127.0.0.1-8000") == default_outbox_dir(
        root, outbox_label(template), "127.0.0.1-8000"
    )


async def test_two_servers_restarted_in_the_other_order_find_their_own_outboxes() -> None:
    first, second = FakeBackend(), FakeBackend()
    async with (
        instance("127.0.0.1-9001", first) as (a, _),
        instance("127.0.0.1-9002", second) as (b, _),
    ):
        token_a = await _admitted(a, "ra")
        token_b = await _admitted(b, "rb")
        first.gate("ra").set()  # finished at shutdown, never fetched: kept in each outbox
        second.gate("rb").set()
    async with instance("127.0.0.1-9002") as (b, sb), instance("127.0.0.1-9001") as (a, sa):
        assert set(sb.entries) == {"rb"}
        assert set(sa.entries) == {"ra"}
        assert (await final_result(a, "ra", token_a))["status"] == "success"
        assert (await final_result(b, "rb", token_b))["status"] == "success"


def test_a_foreign_outbox_is_refused_by_name(tmp_path: Path) -> None:
    mine = Outbox(tmp_path / "outbox", backend="StrandsBackend")
    mine.open()
    mine.close()
    with pytest.raises(OutboxForeign, match=r"'StrandsBackend'.*not 'LocalBackend'"):
        Outbox(tmp_path / "outbox", backend="LocalBackend").open()
    again = Outbox(tmp_path / "outbox", backend="StrandsBackend")  # the lock was released
    again.open()
    again.close()


async def test_a_restart_streams_the_journal_without_room_for_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "outbox"
    backend = FakeBackend()
    async with running(backend, outbox_dir=directory) as (client, _):
        tokens = {f"r{i}": await _admitted(client, f"r{i}") for i in range(5)}
        for rid in tokens:
            backend.gate(rid).set()  # finished at shutdown, never fetched
    journal = directory / JOURNAL_NAME
    inode = journal.stat().st_ino
    with journal.open("ab") as torn:
        torn.write(b'{"op":"done","id":"half-writ')  # killed mid-write
    (directory / ".journal.jsonl.123.456.tmp").write_bytes(b"a compaction killed midway")

    def no_space(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(outbox_module, "write_atomic", no_space)  # no room for a second copy
    async with running(FakeBackend(), outbox_dir=directory) as (client, service):
        assert set(service.entries) == set(tokens)
        for rid, token in tokens.items():
            assert (await final_result(client, rid, token))["status"] == "success"
    assert journal.stat().st_ino == inode  # appended in place
    assert not journal.read_bytes().count(b"half-writ")
    assert list(directory.glob(".*.tmp")) == []
    assert replay(journal) == []


async def test_records_that_failed_to_write_are_written_later_and_health_says_degraded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "outbox"
    monkeypatch.setattr(outbox_module, "RETRY_WRITE_SEC", 0.01)
    real_write = os.write
    full = {"on": False}
    backend = FakeBackend()
    async with running(backend, outbox_dir=directory) as (client, service):
        outbox = service._outbox
        assert outbox is not None

        def write(fd: int, data: Any) -> int:
            if full["on"] and fd == outbox._fd:
                real_write(fd, bytes(data)[:7])  # part of it fits, then the disk is full
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_write(fd, data)

        monkeypatch.setattr(os, "write", write)  # the os module the outbox writes through
        assert (await client.get("/health")).json()["journal"] == {"status": "ok"}
        full["on"] = True
        for i in range(5):
            await _admitted(client, f"r{i}")  # each admission's write fails
        health = (await client.get("/health")).json()
        assert health["status"] == "degraded"
        assert health["journal"]["status"] == "degraded"
        assert "No space left" in health["journal"]["error"]
        full["on"] = False  # space again: the retry writes what failed
        for _ in range(1000):
            if not outbox.failed:
                break
            await asyncio.sleep(0.01)
        assert (await client.get("/health")).json()["journal"] == {"status": "ok"}
        # As if killed -9 now: the journal on disk has every admission.
        records = replay(directory / JOURNAL_NAME)
        assert sorted(r["id"] for r in records) == [f"r{i}" for i in range(5)]
        for i in range(5):
            backend.gate(f"r{i}").set()


def test_an_over_deep_journal_line_is_skipped_not_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "outbox"
    directory.mkdir()
    good = b'{"op":"admit","id":"r1","digest":"00","salt":"00","fingerprint":"00"}\n'
    deep = b'{"op":"admit","id":"r2","x":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    (directory / JOURNAL_NAME).write_bytes(good + deep)
    outbox = Outbox(directory)
    records = outbox.open()
    outbox.close()
    assert [r["id"] for r in records] == ["r1"]
    assert "skipped 1 unreadable record(s)" in caplog.text


def test_an_over_deep_eval_journal_line_is_skipped(tmp_path: Path) -> None:
    from osmosis_ai.eval._impl.run_dir.journal import count_unreadable, iter_records

    path = tmp_path / "journal.jsonl"
    path.write_bytes(b'{"row_index": 0, "run_index": 0}\n' + b"[" * 100_000 + b"\n")
    assert list(iter_records(path)) == [{"row_index": 0, "run_index": 0}]
    assert count_unreadable(path) == 1


def test_a_compaction_syncing_its_copy_never_holds_a_write_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compaction's copy is written and synced outside the outbox's lock (an fsync takes
    seconds on a busy disk, and every admission writes under that lock on the event loop); what
    is written meanwhile is carried into the compacted journal."""
    import threading

    directory = tmp_path / "outbox"
    outbox = Outbox(directory, backend="FakeBackend")
    outbox.open()
    monkeypatch.setattr(outbox_module, "_COMPACT_MIN_BYTES", 0)  # compact past 4x the live bytes
    syncing, release, gave_up = threading.Event(), threading.Event(), threading.Event()
    real_fsync = os.fsync

    def held_fsync(fd: int) -> None:  # the copy's fsync waits for the test
        syncing.set()
        if not release.wait(60):
            gave_up.set()  # the test never got to release it: a write was held back
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", held_fsync)
    try:
        for i in range(20):
            outbox.append(f"r{i}", {"op": "admit", "id": f"r{i}", "pad": "x" * 200})
        for i in range(18):
            outbox.append(f"r{i}", None)  # acknowledged: the journal is now mostly dead lines
        outbox.append("r18", {"op": "admit", "id": "r18", "pad": "y"})  # wakes the writer
        # The timeout only ends a failing run (before this change the copy was synced under
        # the lock, so the writes below waited for the release, which comes after them).
        assert syncing.wait(60), "no compaction started"
        written = threading.Event()

        def write_meanwhile() -> None:
            outbox.append("late", {"op": "admit", "id": "late"})
            outbox.append("r19", None)
            written.set()

        writer = threading.Thread(target=write_meanwhile)
        writer.start()
        answered_while_syncing = written.wait(60) and not release.is_set()
    finally:
        release.set()
    writer.join(60)
    outbox.close()
    assert answered_while_syncing
    assert not gave_up.is_set()
    lines = (directory / JOURNAL_NAME).read_bytes().splitlines()
    assert {record["id"] for record in replay(directory / JOURNAL_NAME)} == {"r18", "late"}
    assert b'"id":"r0"' not in b"".join(lines)  # compacted: the dead records are gone
    assert not list(directory.glob(".*.tmp"))
