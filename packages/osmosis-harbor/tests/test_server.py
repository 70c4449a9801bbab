"""HarborBackend behind the real rollout server: admission control (429) and results."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from harbor.models.job.config import RetryConfig
from harbor.trial.queue import TrialQueue

from osmosis_ai.rollout.backend.harbor import HarborBackend, local_environment_config
from osmosis_ai.rollout.server import create_rollout_server
from osmosis_ai.testing import serve_app

LEASE = "X-Osmosis-Rollout-Lease"


@asynccontextmanager
async def _serve(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with serve_app(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        yield client


def _rollout(rollout_id: str, task: str) -> dict[str, Any]:
    return {
        "rollout_id": rollout_id,
        "initial_messages": [{"role": "user", "content": "make hello.txt"}],
        "chat_completions_url": f"http://127.0.0.1:9/v1/rollouts/{rollout_id}",
        "metadata": {"harbor_task_id": task},
    }


async def _result(client: httpx.AsyncClient, rollout_id: str, lease: str) -> dict[str, Any]:
    while True:
        response = await client.get(f"/rollout/{rollout_id}/result", headers={LEASE: lease})
        body = response.json()
        if body["status"] in ("success", "failure", "cancelled"):
            return body


async def test_full_queue_answers_429_and_admitted_rollouts_complete(
    dataset_dir: Path, trials: Any, tmp_path: Path
) -> None:
    queue = TrialQueue(n_concurrent=1, retry_config=RetryConfig(max_retries=0))
    agent_started = trials.agent_started(queue)
    backend = HarborBackend(
        orchestrator=queue,
        tasks_dir=dataset_dir,
        task_mode="dataset",
        agent="oracle",
        environment_config=local_environment_config(),
        max_queue_depth=1,
    )
    app = create_rollout_server(
        backend=backend,
        lifespan=backend.prewarm_lifespan(),
        configure_logging=False,
        outbox_dir=tmp_path / "outbox",
    )
    async with _serve(app) as client:
        health = (await client.get("/health")).json()
        assert health["backend"] == "harbor"
        assert health["max_queue_depth"] == 1
        first = await client.post("/rollout", json=_rollout("s-first", "blocking"))
        assert first.status_code == 202
        await agent_started("s-first")
        second = await client.post("/rollout", json=_rollout("s-second", "hello"))
        assert second.status_code == 202
        await trials.wait_until(lambda: not backend.has_capacity())

        rejected = await client.post("/rollout", json=_rollout("s-third", "hello"))
        assert rejected.status_code == 429
        assert rejected.headers["Retry-After"]

        trials.release(backend, "s-first")
        results = await asyncio.gather(
            _result(client, "s-first", first.json()["polling_lease_token"]),
            _result(client, "s-second", second.json()["polling_lease_token"]),
        )
        assert [(r["status"], r["sample"]["reward"]) for r in results] == [
            ("success", 1.0),
            ("success", 1.0),
        ]
        assert backend.has_capacity()
