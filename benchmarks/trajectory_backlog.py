"""Memory of a server whose rollouts finish faster than trajectories are written (issue 39).

A no-op backend (each rollout returns at once with a small sample and its trajectory) served in
this process; ``--concurrency`` clients admit and fetch ``--rollouts`` rollouts. Prints the
process's RSS every ``--every`` rollouts and the writer's backlog (queued trajectory jobs);
with the bounded queue (``MAX_QUEUED_TRAJECTORIES``) both stay flat. Prints figures only.

    uv run python benchmarks/trajectory_backlog.py --rollouts 100000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from typing import Any

import httpx


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


async def main(rollouts: int, concurrency: int, every: int) -> None:
    from osmosis_ai.rollout.backend.base import ExecutionBackend
    from osmosis_ai.rollout.server import create_rollout_server
    from osmosis_ai.rollout.trajectory import writer
    from osmosis_ai.rollout.types import (
        ExecutionOutcome,
        ExecutionResult,
        RolloutSample,
        RolloutStatus,
    )
    from osmosis_ai.testing import serve_app

    class Noop(ExecutionBackend):
        async def execute(self, request: Any, progress: Any = None) -> ExecutionOutcome:
            messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]
            sample = RolloutSample(messages=messages, trajectory_messages=messages, reward=1.0)
            return ExecutionOutcome(
                workflow=ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample)
            )

    app = create_rollout_server(backend=Noop(), configure_logging=False)
    done = 0
    started = time.perf_counter()
    print(f"start: RSS {rss_mib():.0f} MiB")
    async with serve_app(app) as url:
        limits = httpx.Limits(max_connections=concurrency)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:

            async def one(i: int) -> None:
                body = {
                    "rollout_id": f"r{i}",
                    "initial_messages": [{"role": "user", "content": "hi"}],
                    "chat_completions_url": "http://127.0.0.1:9/v1",
                }
                admitted = await client.post("/rollout", json=body)
                token = admitted.json()["polling_lease_token"]
                while True:
                    got = await client.get(
                        f"/rollout/r{i}/result", headers={"X-Osmosis-Rollout-Lease": token}
                    )
                    if got.status_code == 200 and got.json().get("status") != "running":
                        return

            async def lane(start: int) -> None:
                nonlocal done
                for i in range(start, rollouts, concurrency):
                    await one(i)
                    done += 1
                    if done % every == 0:
                        print(
                            f"{done:>7} rollouts: RSS {rss_mib():.0f} MiB, "
                            f"trajectory backlog {writer._WRITER.backlog()}, "
                            f"{done / (time.perf_counter() - started):.0f}/s",
                            flush=True,
                        )

            await asyncio.gather(*(lane(k) for k in range(concurrency)))
    print(f"end: RSS {rss_mib():.0f} MiB after {rollouts} rollouts")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rollouts", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--every", type=int, default=10_000)
    args = parser.parse_args()
    os.environ.setdefault("OSMOSIS_HOME", tempfile.mkdtemp(prefix="osmosis-backlog-"))
    asyncio.run(main(args.rollouts, args.concurrency, args.every))
