"""The LLM judge under load: wall time of N concurrent judge calls against a slow scripted judge.

A ``ScriptedPolicyServer`` on 127.0.0.1 plays the judge, answering every call after
``--latency`` seconds. One ``Judge`` (default concurrency unless ``--concurrency``) scores
``--calls`` different answers with ``asyncio.gather``. Figures: wall time, calls per second, the
most calls the server saw in flight at once, and the ideal wall time for that bound
(``ceil(calls / bound) * latency``). A second pass with ``--cache`` shows the cost of re-grading
(zero calls). Prints figures only; never asserts.

    uv run python benchmarks/judge.py
    uv run python benchmarks/judge.py --calls 1000 --latency 0.2 --concurrency 16
"""

from __future__ import annotations

import argparse
import asyncio
import math
import tempfile
import time

from osmosis_ai.eval.judge import Judge, aclose_clients
from osmosis_ai.testing import ScriptedPolicyServer
from osmosis_ai.testing.judge import judge_verdict, scripted_judge


async def _pass(judge: Judge, calls: int) -> float:
    started = time.perf_counter()
    await asyncio.gather(
        *(judge.score(solution_str=f"answer {i}", rubric="score it") for i in range(calls))
    )
    return time.perf_counter() - started


async def main(args: argparse.Namespace) -> None:
    slow = scripted_judge(lambda answer: judge_verdict(0.5, delay=args.latency))
    with tempfile.TemporaryDirectory() as cache:
        async with ScriptedPolicyServer(slow, max_recorded=0) as server:
            judge = Judge(
                "openai/bench",
                base_url=server.url,
                max_concurrency=args.concurrency,
                cache=cache if args.cache else False,
            )
            await judge.score(solution_str="warm-up", rubric="score it")  # import, connect
            server.max_in_flight = 0
            wall = await _pass(judge, args.calls)
            bound = judge.max_concurrency
            ideal = math.ceil(args.calls / bound) * args.latency
            print(f"calls={args.calls} latency={args.latency}s concurrency={bound}")
            print(f"  wall {wall:.3f}s  ({args.calls / wall:.0f} calls/s; ideal {ideal:.3f}s)")
            print(f"  max in flight at the judge: {server.max_in_flight}")
            if args.cache:
                requests_before = judge.usage.requests
                again = await _pass(judge, args.calls)
                made = judge.usage.requests - requests_before
                print(f"  re-grade from cache: {again:.3f}s, {made} judge call(s)")
        await aclose_clients()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Wall time of concurrent LLM-judge calls.")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=None)
    parser.add_argument("--cache", action=argparse.BooleanOptionalAction, default=True)
    asyncio.run(main(parser.parse_args()))
