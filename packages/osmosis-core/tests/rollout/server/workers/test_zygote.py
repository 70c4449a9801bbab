"""Workers forked from the zygote (``python main.py`` calling ``serve(app, workers=2)``): they
come up without importing anything, a SIGKILLed one is replaced through the zygote, a dead
zygote leaves the server serving with exec'd workers, and nothing is left behind."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from osmosis_ai.rollout.client import RolloutClient
from osmosis_ai.rollout.server._impl.workers import WorkerSetupError
from osmosis_ai.rollout.server._impl.workers.zygote import ENV_WORKER_START, fork_unavailable
from osmosis_ai.rollout.types import RolloutStatus
from osmosis_ai.testing import ScriptedPolicyServer

from ..rollout_server_harness import ScriptServer, script_server

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="workers fork from the zygote on Linux only"
)

SCRIPT = Path(__file__).parent / "worker_rollout" / "main.py"
PROMPT = [{"role": "user", "content": "What is 6 * 7?"}]


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def _gone(pid: int) -> bool:
    """Exited and reaped (or a zombie its new parent, init, has yet to reap)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


async def _health_until(
    http: httpx.AsyncClient, check: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    async with asyncio.timeout(120):
        while True:
            health = (await http.get("/health")).json()
            if check(health):
                return health
            await asyncio.sleep(0.05)


async def _all_gone(pids: set[int]) -> bool:
    async with asyncio.timeout(60):
        while not all(_gone(pid) for pid in pids):  # noqa: ASYNC110 - other processes' exit
            await asyncio.sleep(0.05)
    return True


@asynccontextmanager
async def _served(
    tmp_path: Path,
) -> AsyncIterator[tuple[ScriptServer, ScriptedPolicyServer, RolloutClient, httpx.AsyncClient]]:
    """The 2-worker ``python main.py`` server, a policy, and a rollout and an HTTP client to it."""
    async with (
        script_server(
            SCRIPT, tmp_path, OSMOSIS_HOME=str(tmp_path), WORKER_TEST_LOGGING="1"
        ) as server,
        ScriptedPolicyServer("multiply") as policy,
        RolloutClient(url=server.url) as client,
        httpx.AsyncClient(base_url=server.url) as http,
    ):
        yield server, policy, client, http


async def _run(client: RolloutClient, policy: ScriptedPolicyServer, ids: list[str]) -> list[Any]:
    handles = [
        await client.run_rollout_async(PROMPT, policy.chat_completions_url(i), i, label="42")
        for i in ids
    ]
    return [await h for h in handles]


async def test_workers_fork_from_the_zygote_and_a_killed_one_is_replaced_through_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_WORKER_START, raising=False)
    async with _served(tmp_path) as (server, policy, client, http):
        first = (await http.get("/health")).json()
        zygote = first["zygote_pid"]
        parents = {_parent(w["pid"]) for w in first["workers"]}
        slow = [
            await client.run_rollout_async(
                PROMPT,
                policy.chat_completions_url(f"s{i}"),
                f"s{i}",
                label="42",
                metadata={"sleep": 1},
            )
            for i in range(4)
        ]
        for handle in slow:
            assert await handle.wait_for_running() == RolloutStatus.RUNNING
        busy = await _health_until(http, lambda h: all(w["in_flight"] for w in h["workers"]))
        victim = busy["workers"][0]["pid"]
        os.kill(victim, signal.SIGKILL)
        results = [await h for h in slow]
        after = await _health_until(
            http, lambda h: h["restarts"] == 1 and all(w["ready"] for w in h["workers"])
        )
        replacement = after["workers"][0]["pid"]
        replacement_parent = _parent(replacement)
        later = await _run(client, policy, [f"t{i}" for i in range(4)])
    assert zygote is not None
    assert first["zygote_alive"] is True
    assert {w["start"] for w in first["workers"]} == {"fork"}
    assert parents == {zygote}  # forked by the zygote, not exec'd by the server
    failed = [r for r in results if r.status != RolloutStatus.SUCCESS]
    assert len(failed) == 2  # the victim's two rollouts, with the exit status the zygote saw
    assert all(r.err_category == "internal_error" for r in failed)
    assert all(r.err_message and "killed by SIGKILL" in r.err_message for r in failed)
    assert replacement != victim
    assert after["workers"][0]["start"] == "fork"
    assert replacement_parent == zygote
    assert all(r.status == RolloutStatus.SUCCESS and r.sample is not None for r in later)
    assert server.code in (0, -signal.SIGTERM)
    # Server stopped: the zygote and every worker it forked have exited and been reaped.
    assert await _all_gone({zygote, replacement, *(w["pid"] for w in first["workers"])})


async def test_a_dead_zygote_falls_back_to_exec_and_the_server_keeps_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_WORKER_START, raising=False)
    async with _served(tmp_path) as (server, policy, client, http):
        first = (await http.get("/health")).json()
        os.kill(first["zygote_pid"], signal.SIGKILL)
        await _health_until(http, lambda h: h["zygote_alive"] is False)
        os.kill(first["workers"][0]["pid"], signal.SIGKILL)
        after = await _health_until(
            http, lambda h: h["restarts"] == 1 and all(w["ready"] for w in h["workers"])
        )
        results = await _run(client, policy, [f"r{i}" for i in range(6)])
    assert [w["start"] for w in first["workers"]] == ["fork", "fork"]
    assert after["workers"][0]["start"] == "exec"  # the zygote is gone: started by exec
    assert after["workers"][0]["pid"] != first["workers"][0]["pid"]
    assert after["workers"][1] == {**first["workers"][1], "in_flight": 0}  # the orphan serves on
    assert all(r.status == RolloutStatus.SUCCESS for r in results)
    ran_in = {int(r.sample.metrics["pid"]) for r in results if r.sample is not None}
    assert ran_in == {w["pid"] for w in after["workers"]}  # both kinds of worker ran rollouts
    assert server.code in (0, -signal.SIGTERM)
    assert await _all_gone({w["pid"] for w in after["workers"]})


def test_when_workers_cannot_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_WORKER_START, "exec")
    assert fork_unavailable() == f"{ENV_WORKER_START}=exec"
    monkeypatch.setenv(ENV_WORKER_START, "spawn")
    with pytest.raises(WorkerSetupError, match="OSMOSIS_ROLLOUT_WORKER_START='spawn' is not"):
        fork_unavailable()
    monkeypatch.setenv(ENV_WORKER_START, "fork")
    release = threading.Event()
    thread = threading.Thread(target=release.wait, name="busy-thread")
    thread.start()
    try:
        reason = fork_unavailable()
    finally:
        release.set()
        thread.join()
    assert reason is not None
    assert "busy-thread" in reason


async def test_the_zygote_and_its_workers_exit_when_the_server_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_WORKER_START, raising=False)
    async with (
        script_server(
            SCRIPT, tmp_path, OSMOSIS_HOME=str(tmp_path), WORKER_TEST_LOGGING="1"
        ) as server,
        httpx.AsyncClient(base_url=server.url) as http,
    ):
        health = (await http.get("/health")).json()
        server.proc.kill()  # no drain, no shutdown: only the closed sockets tell them
        await server.proc.wait()
        left = {health["zygote_pid"], *(w["pid"] for w in health["workers"])}
        assert await _all_gone(left)
    assert {w["start"] for w in health["workers"]} == {"fork"}
    assert server.code == -signal.SIGKILL
