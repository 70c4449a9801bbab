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
    uv run python benchmarks/langgraph.py --stream        # the model streams (astream "messages")
    uv run python benchmarks/langgraph.py --interleave 8  # both in one process, 8 ABBA rounds
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


async def _batch(
    graph: Any, adapter: bool, url: str, first: int, count: int, concurrency: int, stream: bool
) -> int:
    """``count`` rollouts at ``concurrency``; how many answered ``#### <n>``."""
    from osmosis_ai.rollout import RolloutContext

    gate = asyncio.Semaphore(concurrency)
    ok = 0

    async def invoke(messages: list[dict[str, str]]) -> Any:
        if not stream:
            return await graph.ainvoke({"messages": messages})
        state = None  # the model streams (stream_mode "messages"); the last "values" is the state
        async for mode, data in graph.astream(
            {"messages": messages}, stream_mode=["messages", "values"]
        ):
            state = data if mode == "values" else state
        return state

    async def one(i: int) -> None:
        nonlocal ok
        messages = [{"role": "user", "content": f"What is {i % 97} times {i % 13 + 2}?"}]
        async with gate:
            if not adapter:
                state = await invoke(messages)
                ok += str(state["messages"][-1].content).startswith("####")
                return
            with RolloutContext(chat_completions_url=url, api_key="k", rollout_id=f"r{i}") as ctx:
                await invoke(messages)
                assert ctx.sample_source is not None
                sample = await ctx.sample_source.get_sample()
                ok += str(sample.messages[-1]["content"]).startswith("####")

    await asyncio.gather(*(one(i) for i in range(first, first + count)))
    return ok


async def _run(args: argparse.Namespace) -> dict:
    """One role in this process; or, with ``--interleave N``, both roles in N rounds of
    alternating batches (ABBA order), so a machine whose load drifts charges both alike."""
    roles = ["raw", "adapter"] if args.interleave else [args.role]
    graphs = {role: _graph(role == "adapter", args.policy_url) for role in roles}
    result: dict[str, Any] = {}
    for role in roles:
        await _batch(graphs[role], role == "adapter", args.policy_url, 0, args.warmup,
                     args.concurrency, args.stream)  # fmt: skip
        result[role] = {"cpu_s": 0.0, "wall_s": 0.0, "ok": 0}
    rounds = max(1, args.interleave)
    size = args.rollouts // rounds
    for index in range(rounds):
        for role in roles if index % 2 == 0 else roles[::-1]:
            cpu, wall = time.process_time(), time.perf_counter()
            ok = await _batch(graphs[role], role == "adapter", args.policy_url, index * size, size,
                              args.concurrency, args.stream)  # fmt: skip
            result[role]["cpu_s"] += time.process_time() - cpu
            result[role]["wall_s"] += time.perf_counter() - wall
            result[role]["ok"] += ok
    return result


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
    parser.add_argument("--stream", action="store_true", help="the model streams each call")
    parser.add_argument(
        "--interleave", type=int, default=0, metavar="N",
        help="both roles in one process, N rounds of alternating batches",
    )  # fmt: skip
    args = parser.parse_args()
    if args.role is not None or (args.interleave and args.policy_url):
        print(json.dumps(asyncio.run(_run(args))))
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
        common = ["--policy-url", url, "--rollouts", str(args.rollouts), "--warmup",
                  str(args.warmup), "--concurrency", str(args.concurrency),
                  *(["--stream"] if args.stream else [])]  # fmt: skip
        if args.interleave:
            runs = [["--interleave", str(args.interleave)]]
        else:
            runs = [["--role", "raw"], ["--role", "adapter"]]
        results: dict[str, Any] = {}
        for run in runs:
            out = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), *run, *common],
                capture_output=True, text=True, env=env, check=True,
            )  # fmt: skip
            result = json.loads(out.stdout.strip().splitlines()[-1])
            results.update(result if args.interleave else {run[1]: result})
        for role in ("raw", "adapter"):
            result = results[role]
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
