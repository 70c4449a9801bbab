"""RolloutClient under many concurrent long polls: client CPU per poll and lease expiries.

A rollout server runs in a subprocess with a backend whose rollouts just wait (``--rollout-sec``
on average, 0.5-1.5x each), a short long-poll wait and a lease a few waits long (defaults: 4 s
wait, 12 s lease, as in the report that found the problem). This process admits ``--rollouts``
rollouts at once with one ``RolloutClient`` and awaits them all. Each rollout long-polls on its
own connection, so the client handles ``rollouts / wait`` polls a second.

A client that spends too long per poll delays its own next poll: once a poll starts more than a
lease after the previous one, the server fails the rollout with ``lease_expired``. Figures per
client: client CPU ms per poll (this process's CPU time over the polls it made), polls, lease
expiries and other failures, the worst event-loop lag seen by a 50 ms ticker (how late the client
was running anything), and wall time.

Clients: ``default`` is ``RolloutClient(url=...)`` as users construct it; ``httpx`` injects an
``httpx.AsyncClient`` with httpx's default transport (what the client used before it had its own
HTTP/1.1 path). Prints figures only; never asserts.

    uv run python benchmarks/client_polls.py
    uv run python benchmarks/client_polls.py --clients httpx,default --rollouts 400
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

PROMPT = [{"role": "user", "content": "What is 6 * 7?"}]


def run_server(port: int, wait: float, lease: float, rollout_sec: float) -> None:
    from osmosis_ai.rollout.backend.base import ExecutionBackend
    from osmosis_ai.rollout.server import create_rollout_server, serve
    from osmosis_ai.rollout.types import (
        ExecutionOutcome,
        ExecutionRequest,
        ExecutionResult,
        RolloutSample,
        RolloutStatus,
    )

    class Waits(ExecutionBackend):
        async def execute(
            self, request: ExecutionRequest, progress: Any = None
        ) -> ExecutionOutcome:
            await asyncio.sleep(rollout_sec * random.uniform(0.5, 1.5))
            sample = RolloutSample(
                messages=[*request.prompt, {"role": "assistant", "content": "#### 42"}],
                label=request.label,
                reward=1.0,
            )
            result = ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample)
            return ExecutionOutcome(workflow=result, grader=result)

    app = create_rollout_server(
        backend=Waits(),
        configure_logging=False,
        save_trajectories=False,
        result_wait_timeout_sec=wait,
        polling_lease_timeout_sec=lease,
    )
    serve(app, port=port, log_level="warning")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def wait_healthy(url: str, process: subprocess.Popen[bytes]) -> None:
    import httpx

    async with httpx.AsyncClient() as http:
        for _ in range(300):
            if process.poll() is not None:
                raise RuntimeError("the server process exited during start-up")
            with contextlib.suppress(httpx.TransportError):
                if (await http.get(f"{url}/health")).status_code == 200:
                    return
            await asyncio.sleep(0.05)
    raise RuntimeError("the server did not become healthy")


async def loop_lag(stop: asyncio.Event, worst: list[float]) -> None:
    """Record the worst lateness of a 50 ms ticker (how long the loop was busy elsewhere)."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        before = loop.time()
        await asyncio.sleep(0.05)
        worst[0] = max(worst[0], loop.time() - before - 0.05)


async def drive(url: str, kind: str, prefix: str, rollouts: int) -> dict[str, Any]:
    import httpx

    from osmosis_ai.rollout.client import RolloutClient, RolloutHandle

    polls = 0
    original = RolloutHandle._record

    async def counting(handle: RolloutHandle, result: Any) -> None:
        nonlocal polls
        polls += 1
        await original(handle, result)

    RolloutHandle._record = counting  # type: ignore[method-assign]
    injected = None
    if kind == "httpx":
        injected = httpx.AsyncClient(
            timeout=60.0,
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=256),
        )
    stop, worst = asyncio.Event(), [0.0]
    ticker = asyncio.create_task(loop_lag(stop, worst))
    outcomes: dict[str, int] = {}
    started = time.perf_counter()
    cpu_before = time.process_time()
    try:
        async with RolloutClient(url=url, http_client=injected) as client:
            handles = await asyncio.gather(
                *(
                    client.run_rollout_async(PROMPT, "http://127.0.0.1:9/v1", f"{prefix}-{i}")
                    for i in range(rollouts)
                )
            )
            for result in await asyncio.gather(*handles, return_exceptions=True):
                if isinstance(result, BaseException):
                    key = f"error {type(result).__name__}"
                else:
                    key = result.err_category.value if result.err_category else result.status.value
                outcomes[key] = outcomes.get(key, 0) + 1
    finally:
        cpu = time.process_time() - cpu_before
        elapsed = time.perf_counter() - started
        RolloutHandle._record = original  # type: ignore[method-assign]
        stop.set()
        await ticker
        if injected is not None:
            await injected.aclose()
    return {"cpu": cpu, "elapsed": elapsed, "polls": polls, "outcomes": outcomes, "lag": worst[0]}


async def bench(args: argparse.Namespace) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="osmosis-bench-") as scratch:
        # the server keeps its outbox beside the home (<home>.outbox): both inside scratch
        home = os.path.join(scratch, "home")
        env = {**os.environ, "OSMOSIS_HOME": home, "PYTHONUNBUFFERED": "1"}
        command = [sys.executable, __file__, "--serve", str(port)]
        command += ["--wait", str(args.wait), "--lease", str(args.lease)]
        command += ["--rollout-sec", str(args.rollout_sec)]
        process = subprocess.Popen(command, env=env)  # noqa: ASYNC220 - stopped with SIGINT
        try:
            await wait_healthy(url, process)
            for round_ in range(args.repeat):
                for kind in args.clients.split(","):
                    kind = kind.strip()
                    figures = await drive(url, kind, f"{kind}-{round_}", args.rollouts)
                    polls = max(figures["polls"], 1)
                    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(figures["outcomes"].items()))
                    print(
                        f"client {kind:8} rollouts {args.rollouts}  polls {figures['polls']:5}  "
                        f"client CPU {1000 * figures['cpu'] / polls:5.2f} ms/poll "
                        f"({figures['cpu']:.1f} s)  worst loop lag "
                        f"{1000 * figures['lag']:6.0f} ms  lease expiries "
                        f"{figures['outcomes'].get('lease_expired', 0):3}  "
                        f"wall {figures['elapsed']:5.1f} s  [{outcomes}]",
                        flush=True,
                    )
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=200)
    parser.add_argument("--wait", type=float, default=4.0, help="result_wait_timeout_sec")
    parser.add_argument("--lease", type=float, default=12.0, help="polling_lease_timeout_sec")
    parser.add_argument(
        "--rollout-sec", type=float, default=30.0, help="mean rollout duration (0.5-1.5x each)"
    )
    parser.add_argument("--clients", default="httpx,default", help="httpx and/or default")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        with contextlib.suppress(KeyboardInterrupt):
            run_server(args.serve, args.wait, args.lease, args.rollout_sec)
        return
    print(
        f"RolloutClient long-poll benchmark: python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs, wait {args.wait:g} s, lease {args.lease:g} s, "
        f"rollouts last {args.rollout_sec:g} s on average",
        flush=True,
    )
    asyncio.run(bench(args))


if __name__ == "__main__":
    main()
