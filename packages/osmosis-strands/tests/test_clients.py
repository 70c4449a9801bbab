"""One shared AsyncOpenAI per event loop; per-rollout copies share its connection pool."""

from __future__ import annotations

import asyncio

from osmosis_ai.rollout.integrations.agents.strands import clients


async def test_rollout_clients_are_memoized_and_share_the_loops_pool() -> None:
    first = clients.rollout_client("http://127.0.0.1:1/v1/rollouts/a", "key-a")
    again = clients.rollout_client("http://127.0.0.1:1/v1/rollouts/a", "key-a")
    other = clients.rollout_client("http://127.0.0.1:1/v1/rollouts/b", "key-b")
    assert first is again
    assert other is not first
    assert str(other.base_url).rstrip("/").endswith("/rollouts/b")
    assert other.api_key == "key-b"
    base = clients.base_client()
    assert first._client is base._client is other._client  # one HTTP pool per loop
    assert clients.rollout_client("http://x/v1", None).api_key == clients.EMPTY_API_KEY
    await clients.aclose_clients()
    assert clients.base_client() is not base


def test_each_event_loop_gets_its_own_client() -> None:
    seen: list[object] = []

    async def base_of_this_loop() -> None:
        client = clients.base_client()
        assert clients.base_client() is client  # memoized within the loop
        seen.append(client)

    asyncio.run(base_of_this_loop())
    asyncio.run(base_of_this_loop())
    assert seen[0] is not seen[1]
