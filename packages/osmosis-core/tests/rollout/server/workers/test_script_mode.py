"""``python main.py`` calling ``serve(app, workers=2)``: the workers rebuild the backend from the
script (forked from the zygote, or by exec importing it as ``__mp_main__``, so its ``__main__``
block does not run again)."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx

from osmosis_ai.rollout.client import RolloutClient
from osmosis_ai.rollout.types import RolloutStatus
from osmosis_ai.testing import ScriptedPolicyServer

from ..rollout_server_harness import script_server

SCRIPT = Path(__file__).parent / "worker_rollout" / "main.py"
PROMPT = [{"role": "user", "content": "What is 6 * 7?"}]


async def test_python_main_py_with_two_workers(tmp_path: Path) -> None:
    async with (
        script_server(
            SCRIPT,
            tmp_path,
            OSMOSIS_HOME=str(tmp_path),
            WORKER_TEST_LOGGING="1",
            OSMOSIS_ROLLOUT_WORKER_START="exec",
        ) as server,
        ScriptedPolicyServer("multiply") as policy,
        RolloutClient(url=server.url) as client,
        httpx.AsyncClient(base_url=server.url) as http,
    ):
        handles = [
            await client.run_rollout_async(
                PROMPT, policy.chat_completions_url(f"s{i}"), f"s{i}", label="42"
            )
            for i in range(4)
        ]
        results = [await h for h in handles]
        health = (await http.get("/health")).json()
    worker_pids = {w["pid"] for w in health["workers"]}
    assert health["backend"] == "workers"
    assert {w["start"] for w in health["workers"]} == {"exec"}  # imported as __mp_main__
    assert len(worker_pids) == 2
    assert all(r.status == RolloutStatus.SUCCESS for r in results)
    ran_in = {int(r.sample.metrics["pid"]) for r in results if r.sample is not None}
    assert ran_in <= worker_pids
    assert server.proc.pid not in ran_in
    assert server.code in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it handled
