"""What the framework benchmarks (strands, openai_agents, pydantic_ai_integration) share: a
rollout server role on a free loopback port, starting and stopping role processes, and reading a
process's CPU time, peak memory and import time (imported by path: benchmarks is not a package)."""

from __future__ import annotations

import asyncio
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def serve_rollout_backend(backend: Any, *, save_trajectories: bool) -> None:
    """Serve ``backend`` behind ``create_rollout_server`` on a free port of 127.0.0.1; print the
    base URL as the first stdout line (what :func:`spawn` waits for), then serve until killed."""
    from osmosis_ai._util.serving import run, uvicorn_config, uvicorn_server
    from osmosis_ai.rollout.server import create_rollout_server

    app = create_rollout_server(
        backend=backend, configure_logging=False, save_trajectories=save_trajectories
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    config = uvicorn_config(app, quiet=True, timeout_keep_alive=60)
    run(uvicorn_server(config), sockets=[sock])


def spawn(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    """Start ``python ARGS``, a process that prints its URL on its first stdout line."""
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line:
        proc.kill()
        raise RuntimeError(f"{' '.join(args)} did not start")
    return proc, line


def scratch_env(scratch: str) -> dict[str, str]:
    """This environment with ``OSMOSIS_HOME`` in ``scratch`` (a server keeps its outbox beside
    the home, ``<home>.outbox``: both inside scratch), unbuffered output, no OpenAI key."""
    env = {**os.environ, "OSMOSIS_HOME": os.path.join(scratch, "home"), "PYTHONUNBUFFERED": "1"}
    env.pop("OPENAI_API_KEY", None)
    return env


def spawn_policy(
    env: dict[str, str], policy: str = "multiply"
) -> tuple[subprocess.Popen[str], str]:
    """Start the scripted policy server (``--policy POLICY``); return it and its URL."""
    return spawn(["-m", "osmosis_ai.testing.policy_server", "--policy", policy], env)


def stop(proc: subprocess.Popen[str]) -> None:
    """Terminate ``proc``; kill it if it has not exited 30 s later."""
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a running process (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_peak_rss_mb(pid: int) -> float:
    """Peak resident memory (VmHWM) of a running process, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    """Peak resident memory of this process, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    """User + system CPU seconds of this process."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def import_seconds(
    statement: str, repeats: int = 3, summary: Callable[[list[float]], float] = statistics.median
) -> float:
    """Seconds ``statement`` (an import) takes in a fresh interpreter: ``summary`` (the median,
    or ``min``) of ``repeats`` runs."""
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(repeats)
    ]
    return summary(runs)


#: A benchmark row by index: the rollout's initial messages and its label.
Row = Callable[[int], tuple[list[dict[str, Any]], str]]


async def drive_rollouts(
    server_url: str, policy_url: str, indices: Iterable[int], concurrency: int, row: Row
) -> tuple[int, float, list[str]]:
    """Admit one rollout per index (POST /rollout, ``row(index)``'s messages and label) at most
    ``concurrency`` at a time and long-poll each to its result; return how many earned reward 1,
    the seconds taken and a line per rollout that did not."""
    import httpx

    from osmosis_ai.rollout.server import POLLING_LEASE_HEADER

    gate = asyncio.Semaphore(concurrency)
    rewarded = 0
    failures: list[str] = []
    limits = httpx.Limits(
        max_connections=concurrency * 2, max_keepalive_connections=concurrency * 2
    )
    async with httpx.AsyncClient(base_url=server_url, timeout=120, limits=limits) as http:

        async def one(index: int) -> None:
            nonlocal rewarded
            messages, label = row(index)
            rollout_id = f"bench-{index}"
            async with gate:
                admitted = await http.post(
                    "/rollout",
                    json={
                        "rollout_id": rollout_id,
                        "initial_messages": messages,
                        "label": label,
                        "chat_completions_url": f"{policy_url}/rollouts/{rollout_id}",
                        "llm_api_key": "bench",
                    },
                )
                admitted.raise_for_status()
                lease = {POLLING_LEASE_HEADER: admitted.json()["polling_lease_token"]}
                while True:
                    polled = await http.get(f"/rollout/{rollout_id}/result", headers=lease)
                    polled.raise_for_status()
                    body = polled.json()
                    if body["status"] in {"success", "failure", "cancelled"}:
                        break
            if body["status"] == "success" and (body.get("sample") or {}).get("reward") == 1.0:
                rewarded += 1
            else:
                failures.append(f"{rollout_id}: {body['status']} {body.get('err_message')}")

        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in indices))
        return rewarded, time.perf_counter() - start, failures
