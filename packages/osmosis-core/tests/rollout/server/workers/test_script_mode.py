"""``python main.py`` calling ``serve(app, workers=2)``: the workers import the script as
``__mp_main__`` (its ``__main__`` block does not run again) and rebuild the backend there."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from osmosis_ai.rollout.client import RolloutClient
from osmosis_ai.rollout.types import RolloutStatus
from osmosis_ai.testing import ScriptedPolicyServer

SCRIPT = Path(__file__).parent / "worker_rollout" / "main.py"
PROMPT = [{"role": "user", "content": "What is 6 * 7?"}]


async def _listening_url(proc: asyncio.subprocess.Process) -> str:
    assert proc.stderr is not None
    while line := await proc.stderr.readline():
        text = line.decode()
        if "rollout server listening on " in text:
            return text.rsplit(" ", 1)[-1].strip()
    raise AssertionError("the server exited before listening")


async def test_python_main_py_with_two_workers(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "OSMOSIS_HOME": str(tmp_path),
        "PYTHONUNBUFFERED": "1",
        "WORKER_TEST_LOGGING": "1",
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SCRIPT),
        env=env,
        stderr=subprocess.PIPE,
        cwd=str(tmp_path),
    )
    drain: asyncio.Task[bytes] | None = None
    try:
        async with asyncio.timeout(60):
            url = await _listening_url(proc)
        assert proc.stderr is not None
        drain = asyncio.create_task(proc.stderr.read())  # keep the pipe from filling up
        async with (
            ScriptedPolicyServer("multiply") as policy,
            RolloutClient(url=url) as client,
            httpx.AsyncClient(base_url=url) as http,
        ):
            handles = [
                await client.run_rollout_async(
                    PROMPT, policy.chat_completions_url(f"s{i}"), f"s{i}", label="42"
                )
                for i in range(4)
            ]
            results = [await h for h in handles]
            health = (await http.get("/health")).json()
    finally:
        proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            code = await proc.wait()
            if drain is not None:
                await drain
    worker_pids = {w["pid"] for w in health["workers"]}
    assert health["backend"] == "workers"
    assert len(worker_pids) == 2
    assert all(r.status == RolloutStatus.SUCCESS for r in results)
    ran_in = {int(r.sample.metrics["pid"]) for r in results if r.sample is not None}
    assert ran_in <= worker_pids
    assert proc.pid not in ran_in
    assert code in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it handled
