"""LangGraph integration: agent-process CPU per rollout with the adapter vs the raw framework.

Runs the multiply workload (a ``create_react_agent`` graph: one tool call, then
``#### <product>``) against an instant scripted policy (``python -m
osmosis_ai.testing.policy_server``, its own process) in two ways, each in its own process so
CPU is attributed exactly:

* **raw** — the graph on a plain ``ChatOpenAI(base_url=<policy>)``, no osmosis at all;
* **adapter** — the same graph on ``OsmosisChatModel``, each rollout inside a
  ``RolloutContext`` (late binding, sample capture) and its sample built at the end.

The rollout server's own cost (HTTP, grading, trajectories) is the same for every framework and
is measured by ``benchmarks/server.py``; this isolates what the adapter adds. It also prints the
import times. Nothing is asserted.

    uv run python benchmarks/langgraph.py                 # 256 rollouts at concurrency 64
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# Run as a script, this file's folder is sys.path[0] and this file, named langgraph.py, would
# shadow the framework: drop that folder.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != _HERE]


def _graph(adapter: bool, url: str) -> Any:
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    @tool
    def multiply(a: float, b: float) -> float:
        """Multiply two numbers."""
        return a * b

    if adapter:
        from osmosis_ai.rollout.integrations.agents.langgraph import OsmosisChatModel

        model: Any = OsmosisChatModel(temperature=1.0, max_tokens=1024)
    else:
        from langchain_openai import ChatOpenAI
        from pydantic import SecretStr

        model = ChatOpenAI(
            model="osmosis-rollout", base_url=url, api_key=SecretStr("EMPTY"), max_retries=0,
            temperature=1.0, max_completion_tokens=1024, stream_usage=True,
        )  # fmt: skip
    return create_react_agent(model, [multiply], prompt="Use the tool, answer as '#### <n>'.")


async def _run(adapter: bool, url: str, rollouts: int, warmup: int, concurrency: int) -> dict:
    from osmosis_ai.rollout import RolloutContext

    graph = _graph(adapter, url)
    gate = asyncio.Semaphore(concurrency)
    ok = 0

    async def one(i: int) -> None:
        nonlocal ok
        messages = [{"role": "user", "content": f"What is {i % 97} times {i % 13 + 2}?"}]
        async with gate:
            if not adapter:
                state = await graph.ainvoke({"messages": messages})
                ok += str(state["messages"][-1].content).startswith("####")
                return
            with RolloutContext(chat_completions_url=url, api_key="k", rollout_id=f"r{i}") as ctx:
                await graph.ainvoke({"messages": messages})
                assert ctx.sample_source is not None
                sample = await ctx.sample_source.get_sample()
                ok += str(sample.messages[-1]["content"]).startswith("####")

    await asyncio.gather(*(one(i) for i in range(warmup)))
    ok = 0
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(rollouts)))
    return {"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall, "ok": ok}


def _import_seconds(statement: str, repeats: int = 3) -> float:
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    runs = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout)
        for _ in range(repeats)
    ]  # fmt: skip
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=32)
    parser.add_argument("--role", choices=["raw", "adapter"], default=None)
    parser.add_argument("--policy-url", default="")
    args = parser.parse_args()
    if args.role is not None:
        result = asyncio.run(
            _run(args.role == "adapter", args.policy_url, args.rollouts, args.warmup,
                 args.concurrency)
        )  # fmt: skip
        print(json.dumps(result))
        return

    framework = _import_seconds("import langgraph.prebuilt, langchain_openai")
    integration = _import_seconds(
        "import osmosis_ai.rollout.integrations.agents.langgraph as m; m.OsmosisChatModel"
    )
    print(
        f"import: framework {framework:.2f} s, integration (framework included) {integration:.2f} s"
    )
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("OPENAI_API_KEY", None)
    policy = subprocess.Popen(
        [sys.executable, "-m", "osmosis_ai.testing.policy_server", "--policy", "multiply"],
        stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert policy.stdout is not None
    url = policy.stdout.readline().strip()
    try:
        figures = {}
        for role in ("raw", "adapter"):
            out = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--role", role, "--policy-url",
                 url, "--rollouts", str(args.rollouts), "--warmup", str(args.warmup),
                 "--concurrency", str(args.concurrency)],
                capture_output=True, text=True, env=env, check=True,
            )  # fmt: skip
            result = json.loads(out.stdout.strip().splitlines()[-1])
            figures[role] = result["cpu_s"] * 1000 / args.rollouts
            print(
                f"{role}: {figures[role]:.2f} ms CPU/rollout, "
                f"{args.rollouts / result['wall_s']:.0f} rollouts/s, "
                f"correct {result['ok']}/{args.rollouts}"
            )
        print(f"adapter over raw: {100 * (figures['adapter'] / figures['raw'] - 1):+.1f} %")
    finally:
        policy.terminate()
        policy.wait()


if __name__ == "__main__":
    main()
