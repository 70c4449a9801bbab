"""Worker-process benchmark: admission latency and throughput, one process vs ``workers=N``.

The server runs in a subprocess: this file imported with ``BENCH_APP`` set builds a module-level
``app`` (so worker processes rebuild it, as they would a user's ``main.py``) and serves it with
``serve(app, workers=BENCH_WORKERS)``. The controller is ``benchmarks/server.py``'s lean
poll-protocol client. Apps:

* ``noop``: the workflow returns at once (the server's own cost);
* ``cpu``: 5 ms of pure-Python work, then one call to a scripted policy (an instant one run by
  this process in a thread), then the answer: a CPU-bound agent.

Figures per run: rollouts/s, server-process CPU ms per rollout (the protocol process only; with
workers its excess over one process is the IPC cost), admission p50/p90/p99 at the concurrency
given, and each worker's RSS. Prints figures only; never asserts. Check ``uptime`` first: the
figures are only comparable on an otherwise idle machine.

    uv run python benchmarks/workers.py                          # noop and cpu, 1 and 2 workers
    uv run python benchmarks/workers.py --apps cpu --workers 1,2 -n 1000 -c 64
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import server as base  # benchmarks/server.py: the controller and /proc helpers


def _busy(seconds: float) -> int:
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end:
        total += sum(range(100))
    return total


def build_app(kind: str) -> Any:
    import httpx

    from osmosis_ai.rollout import (
        AgentWorkflow,
        AgentWorkflowConfig,
        AgentWorkflowContext,
        AgentWorkflowOutput,
        Grader,
        GraderContext,
        LocalBackend,
    )
    from osmosis_ai.rollout.server import create_rollout_server

    policy_url = os.environ.get("BENCH_POLICY_URL", "")

    class Workflow(AgentWorkflow[AgentWorkflowConfig]):
        client: httpx.AsyncClient | None = None

        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            if kind == "cpu":
                _busy(0.005)
                if Workflow.client is None:
                    Workflow.client = httpx.AsyncClient(timeout=30)
                response = await Workflow.client.post(
                    f"{policy_url}/chat/completions",
                    json={"model": "m", "messages": ctx.prompt},
                )
                response.raise_for_status()
            return AgentWorkflowOutput(
                messages=[*ctx.prompt, {"role": "assistant", "content": "#### 42"}]
            )

    class Full(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            ctx.set_reward(1.0)

    backend = LocalBackend(workflow=Workflow, grader=Full)
    return create_rollout_server(backend=backend, configure_logging=False)


if os.environ.get("BENCH_APP"):
    app = build_app(os.environ["BENCH_APP"])
    if __name__ == "__main__":
        from osmosis_ai.rollout.server import serve

        serve(
            app,
            port=int(os.environ["BENCH_PORT"]),
            workers=int(os.environ.get("BENCH_WORKERS", "1")),
            log_level="warning",
        )


async def wait_healthy(url: str, process: subprocess.Popen[bytes]) -> None:
    """Like ``server.wait_healthy`` but patient: workers import the app before it is up."""
    import httpx

    async with httpx.AsyncClient() as http:
        for _ in range(1200):
            if process.poll() is not None:
                raise RuntimeError("the server process exited during start-up")
            with contextlib.suppress(httpx.TransportError):
                if (await http.get(f"{url}/health")).status_code == 200:
                    return
            await asyncio.sleep(0.1)
    raise RuntimeError("the server did not become healthy in 120 s")


async def bench(kind: str, workers: int, n: int, concurrency: int, policy_url: str) -> None:
    import httpx

    port = base.free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="osmosis-bench-") as home:
        env = {
            **os.environ,
            "OSMOSIS_HOME": home,
            "BENCH_APP": kind,
            "BENCH_PORT": str(port),
            "BENCH_WORKERS": str(workers),
            "BENCH_POLICY_URL": policy_url,
        }
        process = subprocess.Popen([sys.executable, __file__], env=env)  # noqa: ASYNC220
        try:
            await wait_healthy(url, process)
            async with httpx.AsyncClient() as http:
                health = (await http.get(f"{url}/health")).json()
            pids = [w["pid"] for w in health.get("workers", [])]
            await base.drive_poll(port, "warmup", 200, 32)
            cpu_before = base.cpu_seconds(process.pid)
            figures = await base.drive_poll(port, "run", n, concurrency)
            cpu = base.cpu_seconds(process.pid) - cpu_before
            admissions = figures["admissions"]
            rss = [base.memory_kb(pid, "VmRSS") / 1024 for pid in pids]
            print(
                f"{kind:5} workers={workers} C={concurrency} N={n}: "
                f"{n / figures['elapsed']:6.0f} rollouts/s  "
                f"server CPU {1000 * cpu / n:5.2f} ms/rollout  admission "
                f"p50 {1000 * base.percentile(admissions, 0.5):6.1f} "
                f"p90 {1000 * base.percentile(admissions, 0.9):6.1f} "
                f"p99 {1000 * base.percentile(admissions, 0.99):6.1f} ms  "
                f"lost {figures['lost']}  server RSS "
                f"{base.memory_kb(process.pid, 'VmRSS') / 1024:.0f} MB"
                + (f"  worker RSS {', '.join(f'{r:.0f}' for r in rss)} MB" if rss else ""),
                flush=True,
            )
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(60)


async def main_async(args: argparse.Namespace) -> None:
    from osmosis_ai.testing import ScriptedPolicyServer

    print(f"load average: {os.getloadavg()}", flush=True)
    policy = ScriptedPolicyServer("instant", max_recorded=0).start_in_thread()
    try:
        for kind in args.apps.split(","):
            for workers in (int(w) for w in args.workers.split(",")):
                await bench(kind, workers, args.n, args.c, policy.url)
    finally:
        policy.stop_thread()
    print(f"load average: {os.getloadavg()}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="rollouts per run")
    parser.add_argument("-c", type=int, default=512, help="concurrency (connections)")
    parser.add_argument("--apps", default="noop,cpu")
    parser.add_argument("--workers", default="1,2")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__" and not os.environ.get("BENCH_APP"):
    main()
