"""The adaptive concurrency limit (:mod:`osmosis_ai.eval._impl.adaptive`) on its own."""

from __future__ import annotations

import asyncio

import pytest

from osmosis_ai.eval._impl.adaptive import AdaptiveLimit


async def test_congestion_backs_off_once_per_round_and_success_grows_back() -> None:
    limit = AdaptiveLimit(16)
    assert limit.limit == 16
    slots = [await limit.acquire() for _ in range(4)]
    for started in slots:  # four 429s from calls of one round: one decrease
        limit.congested(started)
        limit.release()
    assert limit.limit == pytest.approx(12)
    assert limit.decreases == 1
    assert limit.congestion_signals == 4
    later = await limit.acquire()  # a call started after the decrease: a new signal
    limit.congested(later)
    limit.release()
    assert limit.limit == pytest.approx(9)
    for _ in range(1040):  # the callers keep every slot busy
        while limit.in_flight < int(limit.limit):
            await limit.acquire()
        limit.succeeded()
        if limit.successes == 40:
            assert 12 < limit.limit <= 16
    assert limit.limit == 16  # never above the ceiling
    summary = limit.summary()
    assert summary["min_limit"] == pytest.approx(9)
    assert summary["peak_in_flight"] == 16
    assert summary["trace"]


async def test_a_limit_the_callers_do_not_fill_does_not_grow() -> None:
    limit = AdaptiveLimit(32)
    started = await limit.acquire()
    limit.congested(started)
    limit.congested(None)
    limit.release()
    assert limit.limit == pytest.approx(18)
    slots = [await limit.acquire() for _ in range(5)]  # 5 of 18 in use: application-limited
    for _ in range(200):
        limit.succeeded()
    assert limit.limit == pytest.approx(18)
    slots += [await limit.acquire() for _ in range(12)]  # 17 of 18: all but one slot in use
    limit.succeeded()
    assert limit.limit == pytest.approx(18 + 1 / 18)
    for _ in slots:
        limit.release()
    waiter_limit = AdaptiveLimit(2)
    await waiter_limit.acquire()
    waiter_limit.congested(None)  # 2 -> 1.5: one slot, held
    waiting = asyncio.create_task(waiter_limit.acquire())
    await asyncio.sleep(0)
    assert not waiting.done()
    waiter_limit.release()  # the waiter takes the slot
    await asyncio.wait_for(waiting, 1)
    waiter_limit.succeeded()  # one in flight of one: limited, so it grows
    assert waiter_limit.limit > 1.5


async def test_acquire_waits_for_room_below_the_limit() -> None:
    limit = AdaptiveLimit(2)
    await limit.acquire()
    await limit.acquire()
    waiter = asyncio.create_task(limit.acquire())
    await asyncio.sleep(0)
    assert not waiter.done()
    limit.release()
    await asyncio.wait_for(waiter, 1)
    assert limit.in_flight == 2


async def test_a_lowered_limit_admits_nothing_until_in_flight_drops_below_it() -> None:
    limit = AdaptiveLimit(4)
    started = [await limit.acquire() for _ in range(4)]
    limit.congested(started[0])  # 4 -> 3
    limit.congested(None)  # no start time known: counted as a new signal, 3 -> 2.25
    assert int(limit.limit) == 2
    waiter = asyncio.create_task(limit.acquire())
    limit.release()
    limit.release()
    await asyncio.sleep(0)
    assert not waiter.done()  # 2 in flight, limit 2
    limit.release()
    await asyncio.wait_for(waiter, 1)


async def test_retry_after_holds_new_acquisitions() -> None:
    limit = AdaptiveLimit(4)
    started = await limit.acquire()
    limit.congested(started, retry_after=0.05)
    limit.release()
    loop = asyncio.get_running_loop()
    before = loop.time()
    await limit.acquire()
    assert loop.time() - before >= 0.04  # held until the Retry-After passed


def test_the_floor_is_one() -> None:
    limit = AdaptiveLimit(2)
    for _ in range(20):
        limit.congested(None)
    assert limit.limit == 1
    assert limit.summary()["decreases"] == 20
