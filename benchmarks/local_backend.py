"""LocalBackend throughput, per-rollout CPU and memory flatness (prints figures, never asserts).

    uv run python benchmarks/local_backend.py [--rollouts 20000] [--concurrency 256]
        [--retention-sec 2] [--trajectory]

Each rollout runs the way the rollout server runs it: a fresh ``RolloutContext`` (with a
``RolloutProgress``) around ``LocalBackend.execute``, a no-op workflow returning one message
and a grader setting reward 1.0. ``--trajectory`` also saves each rollout's ATIF trajectory
(under a temporary ``OSMOSIS_HOME``). RSS is printed at start (after a warm-up whose retained
statuses have expired), after the rollouts, and after status retention has expired again;
the target is the last figure within 5 MB of the start.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import tempfile
import time
from typing import Any


def rss_mb() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def run(args: argparse.Namespace) -> None:
    from osmosis_ai.rollout import (
        AgentWorkflow,
        AgentWorkflowConfig,
        AgentWorkflowContext,
        ExecutionRequest,
        Grader,
        GraderContext,
        LocalBackend,
        RolloutContext,
        RolloutProgress,
    )
    from osmosis_ai.rollout.trajectory import save_trajectory

    class Noop(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            return [{"role": "assistant", "content": "ok"}]

    class One(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            ctx.set_reward(1.0)

    backend = LocalBackend(
        workflow=Noop,
        grader=One,
        max_concurrency=args.concurrency,
    )
    prompt = [{"role": "user", "content": "hi"}]

    async def one(rollout_id: str) -> str:
        with RolloutContext(
            chat_completions_url="http://127.0.0.1:1/v1/rollouts/" + rollout_id,
            api_key="k",
            rollout_id=rollout_id,
            progress=RolloutProgress(),
        ):
            outcome = await backend.execute(
                ExecutionRequest(id=rollout_id, prompt=prompt, label="x")
            )
        if args.trajectory:
            await save_trajectory(rollout_id=rollout_id, result=outcome.result_to_save)
        return outcome.result.status

    async def batch(prefix: str, count: int) -> dict[str, int]:
        statuses: dict[str, int] = {}
        window = max(args.concurrency * 4, 1)
        for start in range(0, count, window):
            chunk = await asyncio.gather(
                *(one(f"{prefix}{i}") for i in range(start, min(start + window, count)))
            )
            for status in chunk:
                statuses[status] = statuses.get(status, 0) + 1
        return statuses

    async def expire() -> None:
        await asyncio.sleep(args.retention_sec + 0.2)
        backend.health()
        gc.collect()

    print(f"RSS before warm-up:          {rss_mb():8.1f} MB")
    await batch("warm-", min(2000, args.rollouts))
    await expire()
    start_rss = rss_mb()
    print(f"RSS at start (after warm-up): {start_rss:8.1f} MB")

    cpu0, wall0 = time.process_time(), time.perf_counter()
    statuses = await batch("r-", args.rollouts)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    gc.collect()
    after = rss_mb()
    health = backend.health()
    print(f"rollouts: {args.rollouts} at concurrency {args.concurrency}; results {statuses}")
    print(f"CPU per rollout:             {cpu / args.rollouts * 1e6:8.1f} us")
    print(
        f"throughput:                  {args.rollouts / wall:8.0f} rollouts/s (wall {wall:.2f} s)"
    )
    print(f"retained statuses:           {health['retained_results']:8d}")
    print(f"RSS after rollouts:          {after:8.1f} MB ({after - start_rss:+.1f} MB)")
    await expire()
    final = rss_mb()
    print(f"retained after expiry:       {backend.health()['retained_results']:8d}")
    print(
        f"RSS after retention expiry:  {final:8.1f} MB ({final - start_rss:+.1f} MB; target within 5 MB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rollouts", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--retention-sec", type=float, default=2.0)
    parser.add_argument("--trajectory", action="store_true", help="also save ATIF trajectories")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="osmosis-bench-") as scratch:
        # the server keeps its outbox beside the home (<home>.outbox): both inside scratch
        home = os.path.join(scratch, "home")
        os.environ["OSMOSIS_HOME"] = home
        os.environ.pop("_OSMOSIS_ROLLOUT_ARTIFACT_ROOT", None)
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
