"""Pydantic AI integration (not named pydantic_ai.py: run as a script, it would shadow the
framework): CPU per rollout with ``OsmosisRolloutModel`` vs the raw framework.

Runs the multiply workload (an ``Agent`` with a ``multiply`` tool: one tool call, then
``#### <product>``) against the instant scripted policy (``python -m
osmosis_ai.testing.policy_server``, its own process) in two ways, each in its own process so
CPU is attributed exactly:

* **raw** — one ``Agent``, run with ``model=OpenAIChatModel(...)`` on one shared
  ``AsyncOpenAI``'s ``with_options(base_url=...)`` copy per rollout (the rollout-scoped URL),
  no osmosis at all;
* **adapter** — the same agent with ``OsmosisRolloutModel()``, each rollout inside a
  ``RolloutContext``, plus building the rollout's sample (native history and trajectory copy).

It prints CPU ms per rollout, the adapter's overhead over raw, and the import times of the
integration and of the framework. Nothing is asserted (issue 40's target: <= +5 %).

    uv run python benchmarks/pydantic_ai_integration.py                  # 400 rollouts at concurrency 50
    uv run python benchmarks/pydantic_ai_integration.py --rollouts 1000 --stream

Figures depend on the machine and on what else runs on it; compare runs on one machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from typing import Any

from bench_processes import cpu_s, import_seconds

INSTRUCTIONS = "You multiply numbers. Use the multiply tool, then answer as '#### <number>'."


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


async def _worker(
    mode: str, url: str, rollouts: int, concurrency: int, stream: bool
) -> dict[str, Any]:
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from osmosis_ai.rollout import RolloutContext
    from osmosis_ai.rollout.integrations.agents.pydantic_ai import OsmosisRolloutModel

    settings: Any = {"temperature": 1.0, "max_tokens": 1024}
    base = AsyncOpenAI(api_key="k", base_url=url, max_retries=0)
    adapter = Agent(OsmosisRolloutModel(settings=settings), instructions=INSTRUCTIONS)
    adapter.tool_plain(multiply)
    raw = Agent(instructions=INSTRUCTIONS)  # its model is given per run: the rollout's URL
    raw.tool_plain(multiply)

    async def run(agent: Agent[None, str], i: int, model: Any = None) -> None:
        prompt = f"What is {i % 97} times 7?"
        if stream:
            async with agent.run_stream(prompt, model=model) as result:
                await result.get_output()
        else:
            await agent.run(prompt, model=model)

    async def one(i: int) -> None:
        scoped = f"{url}/rollouts/{mode}-{i}"
        if mode == "raw":
            model = OpenAIChatModel(
                "osmosis-rollout",
                provider=OpenAIProvider(openai_client=base.with_options(base_url=scoped)),
                settings=settings,
            )
            await run(raw, i, model)
            return
        with RolloutContext(chat_completions_url=scoped, api_key="k", rollout_id=f"r{i}") as ctx:
            await run(adapter, i)
            assert ctx.sample_source is not None
            await ctx.sample_source.get_sample()

    limit = asyncio.Semaphore(concurrency)

    async def bounded(i: int) -> None:
        async with limit:
            await one(i)

    await asyncio.gather(*(bounded(i) for i in range(min(50, rollouts))))  # warm-up
    cpu, wall = cpu_s(), time.perf_counter()
    await asyncio.gather(*(bounded(i) for i in range(rollouts)))
    cpu, wall = cpu_s() - cpu, time.perf_counter() - wall
    return {"cpu_ms_per_rollout": 1000 * cpu / rollouts, "rollouts_per_s": rollouts / wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--worker", choices=["raw", "adapter"], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        result = asyncio.run(
            _worker(args.worker, args.url, args.rollouts, args.concurrency, args.stream)
        )
        print(json.dumps(result))
        return

    policy = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "osmosis_ai.testing.policy_server",
            "--policy",
            "multiply",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert policy.stdout is not None
        url = policy.stdout.readline().strip()
        results = {}
        for mode in ("raw", "adapter"):
            command = [sys.executable, __file__, "--worker", mode, "--url", url]
            command += ["--rollouts", str(args.rollouts), "--concurrency", str(args.concurrency)]
            command += ["--stream"] if args.stream else []
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            results[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        policy.terminate()
        policy.wait()
    raw, adapter = results["raw"]["cpu_ms_per_rollout"], results["adapter"]["cpu_ms_per_rollout"]
    print(f"{args.rollouts} rollouts, concurrency {args.concurrency}, stream={args.stream}")
    for mode, figures in results.items():
        print(
            f"  {mode:8s} {figures['cpu_ms_per_rollout']:7.2f} ms CPU/rollout"
            f"  {figures['rollouts_per_s']:7.1f} rollouts/s"
        )
    print(f"  adapter overhead over raw: {100 * (adapter - raw) / raw:+.1f} %")
    framework = import_seconds("import pydantic_ai, pydantic_ai.models.openai", summary=min)
    integration = import_seconds(
        "from osmosis_ai.rollout.integrations.agents.pydantic_ai import OsmosisRolloutModel",
        summary=min,
    )
    print(
        f"  import: framework {framework:.2f} s, integration (with framework) {integration:.2f} s"
    )


if __name__ == "__main__":
    main()
