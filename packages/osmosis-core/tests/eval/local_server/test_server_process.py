"""The eval's rollout-server child (:class:`RolloutServerProcess` running ``_server_bootstrap.py``)
with ``OSMOSIS_ROLLOUT_WORKERS=2``, as ``eval run --workers 2`` starts it: its workers are forked
from the zygote (not exec'd), they serve a rollout, and none of the three processes outlives the
server, whether it is stopped or the eval dies (its stdin pipe closes)."""

from __future__ import annotations

import asyncio
import importlib.util
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from osmosis_ai.eval._impl.local_server.process import RolloutServerProcess
from osmosis_ai.rollout.client import RolloutClient
from osmosis_ai.rollout.server._impl.workers.zygote import ENV_WORKER_START
from osmosis_ai.rollout.types import RolloutStatus

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="workers fork from the zygote on Linux only"
)

KEY = "eval-server-test-key"


def _alive(pid: int) -> bool:
    """Running (not exited, nor a zombie waiting for init to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def _wait_all_gone(pids: set[int]) -> set[int]:
    """The pids still running after up to 60 s (empty when every one exited)."""
    for _ in range(1200):
        if not any(_alive(pid) for pid in pids):
            break
        await asyncio.sleep(0.05)
    return {pid for pid in pids if _alive(pid)}


@asynccontextmanager
async def _eval_server(
    tmp_path: Path,
    workspace: Callable[..., Path],
    *,
    mode: str = "noop",
    workers: int = 2,
    env: dict[str, str] | None = None,
) -> AsyncIterator[tuple[RolloutServerProcess, dict[str, Any]]]:
    """The tiny rollout (no policy call) served with ``workers`` workers (1: in the server
    process); yields it and its /health."""
    root = workspace(mode=mode).parents[2]  # <root>/configs/eval/tiny.toml
    server = RolloutServerProcess(
        entrypoint=root / "rollouts" / "tiny" / "main.py",
        rollout_dir=root / "rollouts" / "tiny",
        log_path=tmp_path / "server.log",
        env={
            "OSMOSIS_ROLLOUT_WORKERS": str(workers),
            "TINY_MODE": mode,
            "OSMOSIS_HOME": str(tmp_path),
            **(env or {}),
        },
        api_key=KEY,
    )
    try:
        await server.start()
        async with httpx.AsyncClient(
            base_url=server.url, headers={"authorization": f"Bearer {KEY}"}
        ) as http:
            health = (await http.get("/health")).json()
        yield server, health
    finally:
        await server.stop()


async def test_eval_server_workers_are_forked_from_the_zygote_and_serve(
    tmp_path: Path, workspace: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_WORKER_START, raising=False)
    async with (
        _eval_server(tmp_path, workspace) as (server, health),
        RolloutClient(url=server.url, api_key=KEY) as client,
    ):
        result = await client.run_rollout(
            [{"role": "user", "content": "hi"}],
            "http://127.0.0.1:9/v1",  # never called: the noop rollout asks no policy
            "eval-server-workers-1",
            label="1",
        )
    assert health["backend"] == "workers"
    assert [w["start"] for w in health["workers"]] == ["fork", "fork"]
    assert health["zygote_alive"] is True
    assert result.status is RolloutStatus.SUCCESS
    assert result.sample is not None
    assert result.sample.reward == 1.0
    left = {server.pid, health["zygote_pid"], *(w["pid"] for w in health["workers"])}
    assert await _wait_all_gone({pid for pid in left if pid}) == set()


@pytest.mark.parametrize("workers", [1, 2])
async def test_the_first_rollout_finds_the_policy_client_library_already_imported(
    tmp_path: Path, workspace: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """Imported at start-up (before the zygote forks, so workers have it too), not by the first
    rollout's first policy call on the event loop, where it cost the first rows about 1 s."""
    monkeypatch.delenv(ENV_WORKER_START, raising=False)
    async with (
        _eval_server(tmp_path, workspace, mode="preloaded", workers=workers) as (server, _),
        RolloutClient(url=server.url, api_key=KEY) as client,
    ):
        result = await client.run_rollout(
            [{"role": "user", "content": "hi"}],
            "http://127.0.0.1:9/v1",  # never called
            f"eval-server-preloaded-{workers}",
            label="1",
        )
    assert result.status is RolloutStatus.SUCCESS
    assert result.sample is not None
    installed = importlib.util.find_spec("openai") is not None  # the server's environment
    expected = '["openai", "openai.resources.chat"]' if installed else "[]"
    assert result.sample.messages[-1]["content"] == expected


async def test_nothing_outlives_an_eval_that_dies(
    tmp_path: Path, workspace: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The eval's end of the stdin pipe closes (as when it is kill -9ed): the server drains and
    exits, and its zygote and workers follow."""
    monkeypatch.delenv(ENV_WORKER_START, raising=False)
    async with _eval_server(tmp_path, workspace) as (server, health):
        process = server._process
        assert process is not None
        assert process.stdin is not None
        pids = {server.pid, health["zygote_pid"], *(w["pid"] for w in health["workers"])}
        process.stdin.close()
        code = await asyncio.to_thread(process.wait, 60)
        assert await _wait_all_gone({pid for pid in pids if pid}) == set()
    # uvicorn re-raises the SIGTERM after its graceful shutdown; the grace timer's hard exit would be 1
    assert code == -signal.SIGTERM


async def test_admission_is_answered_while_the_agent_loop_is_blocked(
    tmp_path: Path, workspace: Callable[..., Path]
) -> None:
    """``eval run``'s own server in one process has the protocol thread ``serve()`` has: the
    first rollout's workflow blocks its event loop (a synchronous read of a FIFO, as CPU-bound
    agent code would), and a second rollout is still admitted and /health answered; the test
    releases the workflow only after that, and both rollouts then finish."""
    import os

    fifo = tmp_path / "release"
    os.mkfifo(fifo)
    env = {"TINY_BLOCK_FIFO": str(fifo)}
    async with (
        _eval_server(tmp_path, workspace, mode="blocked", workers=1, env=env) as (server, _),
        RolloutClient(url=server.url, api_key=KEY) as client,
    ):
        first = await client.run_rollout_async(
            [{"role": "user", "content": "block"}], "http://127.0.0.1:9/v1", "blocked-1", label="1"
        )
        # Returns once the workflow opened the FIFO: the agent loop is in its blocking read.
        release = await asyncio.to_thread(open, fifo, "wb")
        with release:
            second = await asyncio.wait_for(
                client.run_rollout_async(
                    [{"role": "user", "content": "hi"}],
                    "http://127.0.0.1:9/v1",
                    "blocked-2",
                    label="1",
                ),
                timeout=120,  # a guard, not a measurement: one event loop would never answer
            )
            health = await asyncio.wait_for(client.health(), timeout=120)
            release.write(b"x")
        results = [await first.wait_for_completion(), await second.wait_for_completion()]
    assert health["status"] == "ok"
    assert [r.status for r in results] == [RolloutStatus.SUCCESS] * 2
