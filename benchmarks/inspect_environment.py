"""The Inspect adapter's cost per rollout: an Inspect task (a tool, two scorers) as osmosis rollouts.

Loads ``inspect:<fixtures>/arith.py@addition`` (the adapter tests' task), then runs ``--rollouts``
rollouts (``--concurrency`` at once) through ``LocalBackend`` against the scripted policy on
127.0.0.1 (a tool call, then the answer: two policy calls per rollout). Figures: Inspect's import
and the task load (first-use costs, once per process), then wall ms per rollout and this
process's CPU ms per rollout (Inspect's solver chain, generate loop, tool call and both scorers
plus osmosis's engine and the scripted server). Prints figures only; never asserts.

    uv run python benchmarks/inspect_environment.py
    uv run python benchmarks/inspect_environment.py --rollouts 200 --concurrency 16
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parents[1] / "packages/osmosis-environments/tests/inspect/fixtures"


def _policy(body: dict[str, Any]) -> Any:
    from osmosis_ai.testing.replies import text_reply, tool_call_reply

    messages = body["messages"]
    question = next(m["content"] for m in messages if m["role"] == "user")
    tools = [m for m in messages if m["role"] == "tool"]
    if not tools:
        a, b = (int(x) for x in re.findall(r"\d+", question))
        return tool_call_reply("add", {"a": a, "b": b})
    return text_reply(str(tools[-1]["content"]))


async def main(rollouts: int, concurrency: int) -> None:
    started = time.perf_counter()
    import inspect_ai  # noqa: F401

    imported = time.perf_counter()
    from osmosis_ai.rollout.integrations.environments import load_environment
    from osmosis_ai.testing import ScriptedPolicyServer, run_environment_row

    env = load_environment(f"inspect:{FIXTURES / 'arith.py'}@addition")
    loaded = time.perf_counter()
    print(f"import inspect_ai: {1000 * (imported - started):.0f} ms")
    print(f"load the task: {1000 * (loaded - imported):.0f} ms ({len(env.rows)} rows)")
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int, policy: Any) -> float | None:
        async with gate:
            result = await run_environment_row(env, i % len(env.rows), policy=policy)
        return result.reward

    async with ScriptedPolicyServer(_policy) as policy:
        await one(0, policy)  # first use: Inspect's solver and scorer modules
        cpu, wall = time.process_time(), time.perf_counter()
        rewards = await asyncio.gather(*(one(i, policy) for i in range(rollouts)))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(
        f"{rollouts} rollouts, {concurrency} at once: {1000 * wall / rollouts:.1f} ms wall and "
        f"{1000 * cpu / rollouts:.1f} ms CPU per rollout; rewards "
        f"{sum(r == 1.0 for r in rewards)}/{rollouts} = 1.0"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=60)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.rollouts, args.concurrency)))
