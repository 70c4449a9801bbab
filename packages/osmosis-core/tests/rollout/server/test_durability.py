"""Admissions are retryable and results survive restarts (in-process; the kill -9 tests are in
tests-integration/reliability)."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest

from osmosis_ai.rollout.server._impl.outbox import JOURNAL_NAME, Outbox, OutboxLocked, replay

from .rollout_server_harness import FakeBackend, body, final_result, running


async def test_a_lost_202_is_regained_by_retrying_the_same_request(tmp_path: Path) -> None:
    async with running(FakeBackend(), outbox_dir=tmp_path / "outbox") as (client, service):
        request = body("r1", metadata={"mode": "sleep", "seconds": 0.1})
        first = await client.post("/rollout", json=request)  # its response "is lost"
        again = await client.post("/rollout", json=request)
        other = await client.post("/rollout", json=body("r1", label="different"))
        assert again.status_code == 202
        token = again.json()["polling_lease_token"]
        assert token == first.json()["polling_lease_token"]
        assert other.status_code == 409
        assert other.json() == {"detail": "rollout_id is already registered"}
        assert (await final_result(client, "r1", token))["status"] == "success"
        assert len(service.entries) == 1  # executed once


async def test_a_restored_unfetched_result_is_regained_by_the_same_request(
    tmp_path: Path,
) -> None:
    options: dict[str, Any] = {"outbox_dir": tmp_path / "outbox"}
    request = body("r1")
    async with running(FakeBackend(), **options) as (client, _):
        await client.post("/rollout", json=request)  # 202 lost, then the server restarts
    backend = FakeBackend()
    async with running(backend, **options) as (client, _):
        retried = await client.post("/rollout", json=request)
        different = await client.post("/rollout", json=body("r1", label="other"))
        result = await final_result(client, "r1", retried.json()["polling_lease_token"])
    assert retried.status_code == 202
    assert different.status_code == 409
    assert result["status"] == "success"
    assert backend.requests == []  # the restored result answered it: not run again
    assert replay(tmp_path / "outbox" / JOURNAL_NAME) == []  # fetched: acknowledged


async def test_admissions_and_results_are_journaled_without_request_bodies(
    tmp_path: Path,
) -> None:
    outbox = tmp_path / "outbox"
    backend = FakeBackend()
    async with running(backend, outbox_dir=outbox) as (client, _):
        blocked = body("r1", metadata={"mode": "block"})
        token = (await client.post("/rollout", json=blocked)).json()["polling_lease_token"]
        raw = (outbox / JOURNAL_NAME).read_text()
        [admission] = [json.loads(line) for line in raw.splitlines()][:1]
        assert admission["op"] == "admit"
        assert "initial_messages" not in raw
        assert token not in raw
        backend.gate("r1").set()
        await final_result(client, "r1", token)
        # A rollout that finished in its task's first step, before the admission's write, is
        # written once: as its result, never as an admission.
        fast = (await client.post("/rollout", json=body("r2"))).json()["polling_lease_token"]
        records = [json.loads(line) for line in (outbox / JOURNAL_NAME).read_text().splitlines()]
        assert [r["op"] for r in records if r["id"] == "r2"] == ["done"]
        await final_result(client, "r2", fast)
    assert replay(outbox / JOURNAL_NAME) == []


async def test_two_servers_never_share_an_outbox(tmp_path: Path) -> None:
    held = Outbox(tmp_path / "outbox")
    held.open()
    with pytest.raises(OutboxLocked, match="in use by another running server"):
        Outbox(tmp_path / "outbox").open()
    held.close()
    # The default outbox is per server: two servers side by side get two folders.
    async with running(FakeBackend()) as (_, first), running(FakeBackend()) as (_, second):
        assert first._outbox is not None
        assert second._outbox is not None
        assert first._outbox.directory != second._outbox.directory


async def test_retention_is_bounded_by_bytes(tmp_path: Path) -> None:
    async with running(FakeBackend(), max_retained_bytes=2048) as (client, service):
        for i in range(20):
            token = (await client.post("/rollout", json=body(f"r{i}"))).json()[
                "polling_lease_token"
            ]
            await final_result(client, f"r{i}", token)
        assert service._retained.bytes <= 2048
        assert "r19" in service.entries
        assert "r0" not in service.entries
        size = len(service.entries["r19"].result)
        assert len(service.entries) == 2048 // size


def test_a_done_line_keeps_the_result_bytes_exactly(tmp_path: Path) -> None:
    """The result's wire bytes are embedded as they are (not JSON-encoded again) and come back
    byte for byte; a line whose embedded length does not match is skipped as torn."""
    from osmosis_ai.rollout.server._impl.entry import RolloutEntry
    from osmosis_ai.rollout.server._impl.retention import done_line, entry_from_record
    from osmosis_ai.rollout.types.enums import RolloutStatus

    entry = RolloutEntry('id "quoted"\u00e9', b"\x01" * 32)
    entry.salt, entry.fingerprint = b"\x02" * 16, b"\x03" * 32
    entry.finished, entry.status, entry.reward = True, RolloutStatus.SUCCESS, 0.5
    entry.err_message = "line\nbreak \u2028 and \\ backslash"
    entry.result = (
        b'{"rollout_id":"x","status":"success","sample":{"messages":[{"content":"caf\xc3\xa9 '
        b'\\"q\\" \\n \\u2028"}],"reward":0.5},"err_message":null,"err_category":null}'
    )
    line = done_line(entry)
    assert line is not None
    assert line.endswith(b"}\n")
    assert line.count(b"\n") == 1
    journal = tmp_path / JOURNAL_NAME
    journal.write_bytes(line + line.replace(b'"rlen":', b'"rlen":1'))  # second: length off
    [record] = replay(journal)
    restored = entry_from_record(record, 0.0)
    assert restored is not None
    assert restored.result == entry.result
    assert (restored.rollout_id, restored.err_message) == (entry.rollout_id, entry.err_message)
    assert restored.reward == 0.5


@pytest.mark.parametrize("reward", [0.5, 0.1, 1.0, -0.0, 1e-07, 1e22, 123456789.123456789])
def test_a_done_line_writes_the_reward_as_json_does(tmp_path: Path, reward: float) -> None:
    from osmosis_ai.rollout.server._impl.entry import RolloutEntry
    from osmosis_ai.rollout.server._impl.retention import done_line
    from osmosis_ai.rollout.types.enums import RolloutStatus

    entry = RolloutEntry("r", b"\x01" * 32)
    entry.finished, entry.status, entry.reward = True, RolloutStatus.SUCCESS, reward
    entry.result = b'{"rollout_id":"r"}'
    line = done_line(entry)
    assert line is not None
    assert f'"reward":{json.dumps(reward)},'.encode() in line
    journal = tmp_path / JOURNAL_NAME
    journal.write_bytes(line)
    [record] = replay(journal)
    assert record["reward"] == reward
    assert math.copysign(1.0, record["reward"]) == math.copysign(1.0, reward)


async def test_results_fetched_leave_nothing_in_the_journal(tmp_path: Path) -> None:
    """Admissions written, results acknowledged (acks ride on later writes or the close): after
    the stop nothing is left to re-offer."""
    async with running(FakeBackend(), outbox_dir=tmp_path / "outbox") as (client, _):
        for i in range(20):
            admitted = await client.post("/rollout", json=body(f"r{i}"))
            await final_result(client, f"r{i}", admitted.json()["polling_lease_token"])
    assert replay(tmp_path / "outbox" / JOURNAL_NAME) == []


async def test_admissions_of_one_turn_share_one_write_that_precedes_their_answers(
    tmp_path: Path,
) -> None:
    outbox = Outbox(tmp_path / "outbox")
    outbox.open()
    outbox.bind(asyncio.get_running_loop())
    journal = tmp_path / "outbox" / JOURNAL_NAME
    before = journal.read_bytes()
    lines = [b'{"op":"admit","id":"a%d"}\n' % i for i in range(3)]
    waiters = []
    for i, line in enumerate(lines):
        outbox.put(f"a{i}", line)
        written = outbox.written()
        assert written is not None
        waiters.append(asyncio.ensure_future(written))
    assert journal.read_bytes() == before  # nothing is written in the middle of the turn
    waiters[0].cancel()  # one client gone: the others still wait for the write
    await asyncio.gather(*waiters[1:])
    assert journal.read_bytes() == before + b"".join(lines)  # on file before any answer
    assert waiters[0].cancelled()
    assert outbox.written() is None  # nothing urgent is pending: nobody waits
    outbox.put("a0", None)  # an acknowledgement is not urgent either
    assert outbox.written() is None
    await asyncio.to_thread(outbox.close)
    assert [r["id"] for r in replay(journal)] == ["a1", "a2"]


async def test_undelivered_callbacks_expire_a_day_after_they_were_first_journaled(
    tmp_path: Path,
) -> None:
    """Callbacks to a receiver that never answers are parked in the outbox and re-sent at each
    start, but not for ever: past PENDING_CALLBACKS_KEEP_SEC (24 h) since they were first
    journaled the next start drops them (acknowledged, logged) instead of re-sending them."""
    import socket

    from osmosis_ai.rollout.server._impl.retention import PENDING_CALLBACKS_KEEP_SEC

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    receiver = f"http://127.0.0.1:{port}/cb"  # nothing listens there yet: a dead receiver
    options: dict[str, Any] = {
        "outbox_dir": tmp_path / "outbox",
        "callback_retry_budget_sec": 0.2,
        "callback_backoff_initial_sec": 0.05,
    }
    async with running(FakeBackend(), **options) as (client, service):
        for rid in ("old", "new"):
            callback = body(rid, completion_callback_url=f"{receiver}/{rid}")
            assert (await client.post("/rollout", json=callback)).status_code == 202
        while service._deliveries or len(service.entries) < 2:
            await asyncio.gather(*service._deliveries, asyncio.sleep(0))
    journal = tmp_path / "outbox" / JOURNAL_NAME
    parked = {r["id"]: r for r in replay(journal)}
    assert sorted(parked) == ["new", "old"]
    assert all(r["callbacks"] for r in parked.values())
    # "old" was first journaled more than a day ago (as a server left it then).
    lines = journal.read_bytes().splitlines(keepends=True)
    since = f'"since":{parked["old"]["since"]!r}'.encode()
    aged = f'"since":{parked["old"]["since"] - PENDING_CALLBACKS_KEEP_SEC - 60!r}'.encode()
    journal.write_bytes(
        b"".join(line.replace(since, aged) if b'"id":"old"' in line else line for line in lines)
    )

    arrived: list[str] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        await reader.readexactly(length)
        arrived.append(head.split(b" ")[1].decode().rsplit("/", 1)[-1])
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
        await writer.drain()
        writer.close()

    alive = await asyncio.start_server(answer, "127.0.0.1", port)  # the receiver is back
    try:
        async with running(FakeBackend(), **options) as (_, service):
            assert "old" not in service.entries  # dropped at start, not re-sent
            while service._deliveries:
                await asyncio.gather(*service._deliveries)
    finally:
        alive.close()
        await alive.wait_closed()
    assert arrived == ["new"]
    assert replay(journal) == []  # "new" delivered, "old" expired: both acknowledged
