"""``RolloutClient`` across a server restart: a poll that finds the server gone (kill -9, then
the same server started again on its port and outbox) is retried inside the lease, and the
rollout's handle ends with the result the restarted server reports from its outbox, instead of
the connection error of the first failed poll."""

from __future__ import annotations

from typing import Any

from osmosis_ai.rollout.client import RolloutClient


async def test_polling_survives_a_restart_the_outbox_survives(server_factory: Any) -> None:
    server = server_factory()
    await server.start()
    async with RolloutClient(url=server.url) as client:
        handles = [
            await client.run_rollout_async(
                [{"role": "user", "content": "hi"}],
                "http://127.0.0.1:9/v1",
                f"r{i}",
                metadata={"seconds": 3600},
            )
            for i in range(20)
        ]
        for handle in handles:
            await handle.wait_for_running()
        await server.kill()
        restarted = server_factory(port=server.port)
        await restarted.start()
        results = [await handle for handle in handles]
    # Each was running when the server died: the restart reports it failed, naming the restart.
    assert [r.status for r in results] == ["failure"] * 20
    assert all("restart" in (r.err_message or "") for r in results)
