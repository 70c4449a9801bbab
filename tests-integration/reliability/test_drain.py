"""SIGTERM drain: the listener stays open until every result that finishes inside the grace
period has been fetched; new rollouts get 503 + Retry-After meanwhile."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import httpx
from reliability_support import LEASE, body

from osmosis_ai.rollout.client import RolloutClient


async def test_100_rollouts_finishing_inside_the_grace_period_are_all_fetched(
    server_factory: Any,
) -> None:
    server = server_factory(grace=20.0)
    await server.start()
    async with RolloutClient(url=server.url) as client:
        handles = [
            await client.run_rollout_async(
                [{"role": "user", "content": "hi"}],
                "http://127.0.0.1:9/v1",
                f"r{i}",
                metadata={"seconds": 0.5 + (i % 10) * 0.2},
            )
            for i in range(100)
        ]
        server.signal(signal.SIGTERM)
        async with httpx.AsyncClient(base_url=server.url) as raw:
            late = await raw.post("/rollout", json=body("late"))
            health = await raw.get("/health")
        results = await asyncio.gather(*handles)
    assert late.status_code == 503
    assert late.headers["retry-after"]
    assert health.json()["lifecycle"]["accepting_rollouts"] is False
    assert [r.status for r in results] == ["success"] * 100
    assert {r.rollout_id for r in results} == {f"r{i}" for i in range(100)}
    assert await server.wait() in (0, -signal.SIGTERM)


async def test_a_rollout_cut_by_the_drain_reports_the_drain_message(server_factory: Any) -> None:
    server = server_factory(grace=0.5)
    await server.start()
    async with httpx.AsyncClient(base_url=server.url) as raw:
        token = (await raw.post("/rollout", json=body("slow", seconds=60))).json()[
            "polling_lease_token"
        ]
        server.signal(signal.SIGTERM)
        await server.wait()
    restarted = server_factory(grace=0.5, port=server.port)
    await restarted.start()
    async with httpx.AsyncClient(base_url=restarted.url) as raw:
        result = (await raw.get("/rollout/slow/result", headers={LEASE: token})).json()
    assert result["status"] == "cancelled"
    assert "drain grace period of 0.5s elapsed" in result["err_message"]


async def test_a_long_poll_made_during_the_drain_ends_with_the_grace_period(
    server_factory: Any,
) -> None:
    """A poll that arrives while the server drains waits at most until the grace period ends,
    not ``result_wait_timeout_sec``: the process exits after grace + cleanup (+ callbacks),
    as documented, however long a poll may otherwise wait (here 3,000 s)."""
    options = {"result_wait_timeout_sec": 3000, "polling_lease_timeout_sec": 3600}
    server = server_factory(grace=0.5, options=options)
    await server.start()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as raw:
        admitted = await raw.post("/rollout", json=body("slow", seconds=3600))
        token = admitted.json()["polling_lease_token"]
        server.signal(signal.SIGTERM)
        # Poll as a controller does: the poll waiting when the signal lands is woken, and the
        # next one is made during the drain (it used to wait the full 3,000 s).
        polls: list[str] = []
        while True:
            try:
                polled = await raw.get("/rollout/slow/result", headers={LEASE: token})
            except (httpx.ConnectError, httpx.RemoteProtocolError):
                break  # the listener closed after the grace period
            polls.append(polled.json()["status"])
            if polls[-1] not in ("queued", "running"):
                break
        assert polls[:1] == ["running"]
        assert await server.wait() in (0, -signal.SIGTERM)
