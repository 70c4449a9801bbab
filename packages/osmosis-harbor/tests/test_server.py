"""HarborBackend behind the real rollout server: admission control (429) and results, in one
process and in worker processes forked from the zygote (a user's ``python main.py`` calling
``serve(app, workers=2)``)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from harbor.models.job.config import RetryConfig
from harbor.trial.queue import TrialQueue

from osmosis_ai.rollout.backend.harbor import HarborBackend, local_environment_config
from osmosis_ai.rollout.server import create_rollout_server
from osmosis_ai.testing import serve_app

LEASE = "X-Osmosis-Rollout-Lease"

MAIN_PY = """
import os
from pathlib import Path

from harbor.models.job.config import RetryConfig
from harbor.trial.queue import TrialQueue

from osmosis_ai.rollout.backend.harbor import HarborBackend, local_environment_config
from osmosis_ai.rollout.server import create_rollout_server, serve

backend = HarborBackend(
    orchestrator=TrialQueue(n_concurrent=2, retry_config=RetryConfig(max_retries=0)),
    tasks_dir=Path(os.environ["TEST_TASKS_DIR"]),
    task_mode="dataset",
    agent="oracle",
    environment_config=local_environment_config(),
)
app = create_rollout_server(backend=backend, lifespan=backend.prewarm_lifespan())

if __name__ == "__main__":
    serve(app, port=0, workers=2)
"""


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


async def _listening_url(proc: asyncio.subprocess.Process) -> str:
    assert proc.stderr is not None
    async with asyncio.timeout(180):
        while line := await proc.stderr.readline():
            text = line.decode()
            if "rollout server listening on " in text:
                return text.rsplit(" ", 1)[-1].strip()
    raise AssertionError("the server exited before listening")


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="workers fork from the zygote on Linux only"
)
async def test_harbor_rollouts_run_in_forked_workers(dataset_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text(MAIN_PY)
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "TEST_TASKS_DIR": str(dataset_dir),
        "TMPDIR": str(tempfile.gettempdir()),  # the test's scratch dir (see conftest)
    }
    env.pop("OSMOSIS_ROLLOUT_WORKER_START", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "main.py", cwd=str(tmp_path), env=env, stderr=asyncio.subprocess.PIPE
    )
    drain: asyncio.Task[bytes] | None = None
    try:
        url = await _listening_url(proc)
        assert proc.stderr is not None
        drain = asyncio.create_task(proc.stderr.read())  # keep the pipe from filling up
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            health = (await client.get("/health")).json()
            tasks = {"w-hello-1": "hello", "w-quarter-1": "quarter", "w-hello-2": "hello"}
            leases = {}
            for rollout_id, task in tasks.items():
                admitted = await client.post("/rollout", json=_rollout(rollout_id, task))
                assert admitted.status_code == 202, admitted.text
                leases[rollout_id] = admitted.json()["polling_lease_token"]
            async with asyncio.timeout(300):
                results = await asyncio.gather(
                    *(_result(client, rid, lease) for rid, lease in leases.items())
                )
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(60):
            code = await proc.wait()
            if drain is not None:
                await drain
    assert health["backend"] == "workers"
    assert [w["start"] for w in health["workers"]] == ["fork", "fork"]
    by_id = {r["rollout_id"]: r for r in results}
    assert [by_id[rid]["status"] for rid in tasks] == ["success"] * 3, results
    assert [by_id[rid]["sample"]["reward"] for rid in tasks] == [1.0, 0.25, 1.0]
    assert code == -signal.SIGTERM  # drained, then uvicorn re-raises the SIGTERM it caught
