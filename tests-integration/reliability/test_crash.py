"""kill -9 at random points: every admitted rollout is answered after a restart (its result if
it had finished, else a terminal ``internal_error`` naming the restart), never 404; a crash
during the restart loses nothing; a retried admission (lost 202) regains its lease."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import httpx
from reliability_support import LEASE, body

N = 500


async def _admit_all(
    url: str,
    bodies: dict[str, dict[str, Any]],
    tokens: dict[str, str] | None = None,
    reached: tuple[int, asyncio.Event] | None = None,
) -> dict[str, str]:
    """POST every body at once; return the tokens of the admissions that were answered
    (``reached``: set the event once that many were answered)."""
    tokens = {} if tokens is None else tokens
    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:

        async def one(rid: str) -> None:
            try:
                response = await client.post("/rollout", json=bodies[rid])
            except httpx.TransportError:
                return  # the response was lost (the server died): retried after the restart
            assert response.status_code == 202, response.text
            tokens[rid] = response.json()["polling_lease_token"]
            if reached is not None and len(tokens) >= reached[0]:
                reached[1].set()

        await asyncio.gather(*(one(rid) for rid in bodies))
    return tokens


async def _statuses(url: str, ids: list[str]) -> dict[str, str]:
    async with httpx.AsyncClient(base_url=url) as client:
        return {rid: (await client.get(f"/rollout/{rid}/status")).json()["status"] for rid in ids}


async def _fetch_all(url: str, tokens: dict[str, str]) -> dict[str, httpx.Response]:
    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:
        responses = await asyncio.gather(
            *(client.get(f"/rollout/{rid}/result", headers={LEASE: t}) for rid, t in tokens.items())
        )
    return dict(zip(tokens, responses, strict=True))


async def test_kill_9_at_random_points_then_a_crash_during_restart_loses_nothing(
    server_factory: Any,
) -> None:
    rng = random.Random(20)
    bodies = {f"r{i}": body(f"r{i}", seconds=rng.uniform(0.0, 1.5)) for i in range(N)}
    server = server_factory()
    await server.start()
    tokens: dict[str, str] = {}
    # The fault's position is random: after 10-490 admissions were answered, a bit later.
    reached = asyncio.Event()
    target = rng.randint(10, N - 10)
    admitting = asyncio.create_task(_admit_all(server.url, bodies, tokens, (target, reached)))
    await reached.wait()
    await asyncio.sleep(rng.uniform(0.0, 1.0))
    await server.kill()
    await admitting

    # Crash during the restart: killed as soon as it answers, before anyone fetched anything.
    crashed = server_factory(port=server.port)
    await crashed.start()
    await crashed.kill()

    restarted = server_factory(port=server.port)
    await restarted.start()
    # Admissions whose 202 was lost: the same request again is answered (regained or new).
    lost = {rid: bodies[rid] for rid in bodies if rid not in tokens}
    tokens.update(await _admit_all(restarted.url, lost))
    assert len(tokens) == N
    statuses = await _statuses(restarted.url, [rid for rid in tokens if rid not in lost])
    responses = await _fetch_all(restarted.url, tokens)
    while pending := {  # re-admitted ones may still run: poll them to the end
        rid: tokens[rid]
        for rid, r in responses.items()
        if r.status_code == 200 and r.json()["status"] in ("queued", "running")
    }:
        responses.update(await _fetch_all(restarted.url, pending))
    codes = {r.status_code for r in responses.values()}
    assert codes == {200}, codes  # no 404: every admitted rollout is known
    results = {rid: r.json() for rid, r in responses.items()}
    finished = [rid for rid, r in results.items() if r["status"] == "success"]
    restarted_ones = [rid for rid, r in results.items() if r["status"] == "failure"]
    assert len(finished) + len(restarted_ones) == len(results)
    assert restarted_ones  # the crash did catch rollouts in flight
    for rid in restarted_ones:
        assert results[rid]["err_category"] == "internal_error"
        assert results[rid]["err_message"].startswith("server_restarted")
    assert set(statuses.values()) <= {"success", "failure"}
