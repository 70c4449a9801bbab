"""How long rollout workers take to start: forked from the zygote vs exec'd (a new interpreter
that imports the entrypoint and the agent framework again).

For each app (``benchmarks/worker_apps.py``: ``noop`` imports only osmosis, ``strands`` and
``openai-agents`` their framework too) and each round, starts the server with 2 workers once per
start mode (``OSMOSIS_ROLLOUT_WORKER_START=exec`` and the default, fork), interleaved
(exec, fork, fork, exec, ...), and reports:

* pool start: from the pool's start to every worker ready (measured inside the server);
* server ready: from spawning the server process to its first ``/health`` answer;
* restart: a worker SIGKILLed, from its death to its replacement ready (inside the server).

On a loaded machine quote the ratios, not the absolute figures. Never asserts.

    uv run python benchmarks/worker_startup.py                    # noop and strands, 3 rounds
    uv run python benchmarks/worker_startup.py --apps noop --rounds 5
    env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX=/tmp/pyc uv run python \\
        benchmarks/worker_startup.py                              # warm bytecode
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
MODES = ("exec", "fork")


async def _poll(url: str, process: subprocess.Popen[bytes], check: Any) -> dict[str, Any]:
    import httpx

    async with httpx.AsyncClient() as http:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError("the server process exited")
            try:
                body = (await http.get(url)).json()
            except httpx.TransportError:
                body = None
            if body is not None and check(body):
                return body
            await asyncio.sleep(0.02)
    raise RuntimeError(f"{url} did not reach the expected state in 300 s")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def one_run(app: str, mode: str) -> dict[str, float]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="osmosis-bench-") as scratch:
        # the server keeps its outbox beside the home (<home>.outbox): both inside scratch
        home = os.path.join(scratch, "home")
        env = {
            **os.environ,
            "OSMOSIS_HOME": home,
            "BENCH_APP": app,
            "BENCH_PORT": str(port),
            "BENCH_WORKERS": "2",
            "OSMOSIS_ROLLOUT_WORKER_START": mode,
        }
        began = time.perf_counter()
        script = str(_HERE / "worker_apps.py")
        process = subprocess.Popen([sys.executable, script], env=env)  # noqa: ASYNC220
        try:
            health = await _poll(f"{url}/health", process, lambda h: True)
            ready = time.perf_counter() - began
            starts = {w["start"] for w in health["workers"]}
            if starts != {mode}:
                raise RuntimeError(f"asked for {mode}, the workers started by {starts}")
            os.kill(health["workers"][0]["pid"], signal.SIGKILL)
            pool = await _poll(f"{url}/bench/pool", process, lambda p: p["restart_secs"])
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(60)
    return {"pool": pool["start_sec"], "ready": ready, "restart": pool["restart_secs"][0]}


def _row(app: str, mode: str, runs: list[dict[str, float]]) -> str:
    cells = [
        f"{statistics.median(r[key] for r in runs) * 1000:8.0f}"
        for key in ("pool", "ready", "restart")
    ]
    return f"{app:14} {mode:5} " + " ".join(cells)


async def main() -> None:
    parser = argparse.ArgumentParser(
        description="How long rollout workers take to start: fork vs exec."
    )
    parser.add_argument("--apps", default="noop,strands")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    for app in args.apps.split(","):
        for round_ in range(args.rounds):
            order = MODES if round_ % 2 == 0 else MODES[::-1]
            for mode in order:
                run = await one_run(app, mode)
                results.setdefault((app, mode), []).append(run)
                print(
                    f"round {round_ + 1} {app} {mode}: pool start {run['pool'] * 1000:.0f} ms, "
                    f"server ready {run['ready'] * 1000:.0f} ms, restart "
                    f"{run['restart'] * 1000:.0f} ms",
                    flush=True,
                )
    print(f"\nmedians over {args.rounds} rounds (ms); load average {os.getloadavg()[0]:.1f}")
    print(f"{'app':14} {'start':5} {'pool':>8} {'ready':>8} {'restart':>8}")
    for (app, mode), runs in results.items():
        print(_row(app, mode, runs))
    for app in args.apps.split(","):
        exec_runs, fork_runs = results[(app, "exec")], results[(app, "fork")]
        ratios = [
            statistics.median(r[key] for r in exec_runs)
            / max(statistics.median(r[key] for r in fork_runs), 1e-6)
            for key in ("pool", "ready", "restart")
        ]
        print(
            f"{app:14} exec/fork: pool {ratios[0]:.1f}x, ready {ratios[1]:.2f}x, "
            f"restart {ratios[2]:.1f}x"
        )


if __name__ == "__main__":
    asyncio.run(main())
