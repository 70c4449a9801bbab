"""A deleted ``lease.key``: results restored at the next start were admitted under a key the
server no longer has, so their lease tokens cannot be derived again. A retried admission of
such a rollout (a controller that lost the 202) gets a new token that fetches the result,
instead of a 409 that left the result unreachable."""

from __future__ import annotations

from typing import Any

import httpx
from reliability_support import LEASE, body


async def test_a_retried_admission_after_lease_key_was_deleted_regains_the_result(
    server_factory: Any,
) -> None:
    server = server_factory()
    await server.start()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as raw:
        first = await raw.post("/rollout", json=body("r1"))
        assert first.status_code == 202
        status = await raw.get("/rollout/r1/status")
    await server.kill()  # the result (or its admission) stays in the outbox, unfetched
    assert status.status_code == 200
    (server.outbox / "lease.key").unlink()

    restarted = server_factory(port=server.port)
    await restarted.start()
    async with httpx.AsyncClient(base_url=restarted.url, timeout=30) as raw:
        again = await raw.post("/rollout", json=body("r1"))
        assert again.status_code == 202, again.text
        token = again.json()["polling_lease_token"]
        result = await raw.get("/rollout/r1/result", headers={LEASE: token})
        repeated = await raw.post("/rollout", json=body("r1"))
    assert result.status_code == 200
    assert result.json()["status"] in ("success", "failure")
    assert repeated.json()["polling_lease_token"] == token  # stable from now on
    assert (restarted.outbox / "lease.key").exists()
