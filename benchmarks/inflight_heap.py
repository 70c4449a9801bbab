"""Objects the rollout server process keeps for the garbage collector per rollout in flight.

Serves ``benchmarks/worker_apps.py``'s ``cpu`` app (no CPU work, one policy call) with a pool of
2 workers, its policy URL a socket that accepts connections and never answers, so every
admitted rollout stays in flight; admits ``-n`` (512) rollouts, starts one long poll on each,
and once all are in flight reads ``/bench/heap`` (the objects ``gc`` tracks outside the frozen
start-up state). Prints that count over the idle server's, per rollout in flight, and the
commonest types. Every full collection traverses these objects, so its pause grows with them.
Prints figures only; never asserts.

    uv run python benchmarks/inflight_heap.py -n 512
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

_HERE = Path(__file__).resolve().parent


async def measure(url: str, policy: str, n: int) -> None:
    limits = httpx.Limits(max_connections=n + 10)
    async with httpx.AsyncClient(limits=limits, timeout=120) as http:
        for _ in range(1200):
            with contextlib.suppress(httpx.TransportError):
                if (await http.get(f"{url}/health")).status_code == 200:
                    break
            await asyncio.sleep(0.1)
        idle = (await http.get(f"{url}/bench/heap")).json()

        async def one(index: int) -> None:
            body = {
                "rollout_id": f"r{index}",
                "initial_messages": [{"role": "user", "content": "What is 6 times 7?"}],
                "label": "42",
                "chat_completions_url": policy,
                "llm_api_key": "bench",
            }
            response = await http.post(f"{url}/rollout", json=body)
            if response.status_code != 202:
                print(f"admission {response.status_code}: {response.text[:200]}")
                return
            lease = {"x-osmosis-rollout-lease": response.json()["polling_lease_token"]}
            with contextlib.suppress(httpx.HTTPError):
                await http.get(f"{url}/rollout/r{index}/result", headers=lease)

        tasks = [asyncio.create_task(one(i)) for i in range(n)]
        health: dict[str, Any] = {}
        for _ in range(600):
            await asyncio.sleep(0.5)
            health = (await http.get(f"{url}/health")).json()
            if sum(w["in_flight"] for w in health["workers"]) + health["queued"] >= n:
                break
        await asyncio.sleep(3)  # the long polls reach their wait
        busy = (await http.get(f"{url}/bench/heap")).json()
        for task in tasks:
            task.cancel()
    before, after = sum(idle["generations"]), sum(busy["generations"])
    in_flight = sum(w["in_flight"] for w in health["workers"]) + health["queued"]
    print(
        f"idle server: {before} tracked objects; with {in_flight} rollouts in flight (a long poll "
        f"on each): {after}, {(after - before) / max(in_flight, 1):.1f} per rollout in flight"
    )
    print("commonest types: " + ", ".join(f"{name} {count}" for name, count in busy["types"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("-n", type=int, default=512, help="rollouts in flight")
    args = parser.parse_args()
    sink = socket.socket()
    sink.bind(("127.0.0.1", 0))
    sink.listen(4096)  # accepted by the kernel, never answered: each policy call hangs
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="osmosis-bench-") as scratch:
        # the server keeps its outbox beside the home (<home>.outbox): both inside scratch
        home = os.path.join(scratch, "home")
        env = {
            **os.environ,
            "OSMOSIS_HOME": home,
            "BENCH_APP": "cpu",
            "BENCH_CPU_MS": "0",
            "BENCH_PORT": str(port),
            "BENCH_WORKERS": "2",
        }
        server = subprocess.Popen([sys.executable, str(_HERE / "worker_apps.py")], env=env)
        try:
            policy = f"http://127.0.0.1:{sink.getsockname()[1]}"
            asyncio.run(measure(f"http://127.0.0.1:{port}", policy, args.n))
        finally:
            server.terminate()
            server.wait(120)
            sink.close()


if __name__ == "__main__":
    main()
