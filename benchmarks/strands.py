"""Strands integration: rollout-server CPU per rollout against the raw Strands floor.

The workload is the multiply rollout of the public SDK's Strands template: an agent with one
``multiply`` tool calls it once and answers ``#### <product>``, against the scripted ``multiply``
policy answering instantly (``python -m osmosis_ai.testing.policy_server``, its own process).
Measured in processes of their own so that CPU time is attributed exactly:

* **raw Strands floor**: the same agent as a plain ``strands.Agent`` with
  ``OpenAIModel(client=<one shared AsyncOpenAI>)``, ``invoke_async()`` loops at the given
  concurrency, no osmosis anywhere. This is the cheapest way to drive Strands by hand.
* **LocalBackend, no HTTP**: the template workflow run by ``LocalBackend.execute`` in process,
  alternating rounds with the floor in the same process, so that the integration's own cost is
  visible apart from the server's (a shared machine's drifting load would swamp a few percent).
* **rollout server**: ``create_rollout_server(LocalBackend(...))`` under uvicorn running the
  template workflow (module-level ``OsmosisRolloutModel(params=...)``, ``OsmosisStrandsAgent``,
  grader reading ``ctx.sample.messages[-1]``), with grading and trajectory saving, driven over
  real HTTP by a 0.3.8 poll-protocol controller in this process.

Printed: CPU ms per rollout of the process doing the work, rollouts/s, peak RSS, the server's
overhead over the floor and the integration's import time. Nothing is asserted. The issue's
targets: <= 7 ms server CPU per rollout (public SDK 0.3.8: 28 ms), <= 10 % over the floor,
``import osmosis_ai.rollout.integrations.agents.strands`` <= 2 s (public SDK: 7.2 s).

    uv run python benchmarks/strands.py                    # 512 rollouts at concurrency 128
    uv run python benchmarks/strands.py --no-stream --rollouts 1000

Figures depend on the machine and on whatever else is running; compare runs on one machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_processes import (
    import_seconds,
    peak_rss_mb,
    proc_cpu_s,
    proc_peak_rss_mb,
    scratch_env,
    spawn,
    spawn_policy,
    stop,
)

# Run as a script, this file's folder is sys.path[0] and this file, named strands.py, would
# shadow the real `strands` package: drop the folder before anything imports Strands.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != _HERE]

SYSTEM_PROMPT = "You multiply numbers. Use the multiply tool, then answer as '#### <number>'."
PARAMS = {"temperature": 1.0, "top_p": 1.0, "max_tokens": 1024}

# -- the workload (built inside the worker processes) ------------------------------------------


def _operands(index: int) -> tuple[int, int]:
    return 3 + index % 97, 5 + index % 89


def _prompt(index: int) -> list[dict[str, Any]]:
    a, b = _operands(index)
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"What is {a} times {b}?"},
    ]


def _tool() -> Any:
    from strands import tool

    @tool
    def multiply(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    return multiply


def _answer(message: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in message.get("content") or [])


def _done(message: dict[str, Any]) -> bool:
    return not any("toolUse" in block for block in message.get("content") or [])


def _template(stream: bool) -> tuple[type, type, Any]:
    """Workflow, grader and config written the way the public SDK's Strands template is."""
    from strands.models.model import Model

    from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowConfig, Grader
    from osmosis_ai.rollout.integrations.agents.strands import (
        OsmosisRolloutModel,
        OsmosisStrandsAgent,
    )

    class MultiplyConfig(AgentWorkflowConfig):
        name: str = "multiply"
        model: Model
        tools: Any

    config = MultiplyConfig(
        model=OsmosisRolloutModel(params={**PARAMS, "stream": stream}), tools=[_tool()]
    )

    class MultiplyWorkflow(AgentWorkflow):
        async def run(self, ctx: Any) -> None:
            agent = OsmosisStrandsAgent(
                name="multiply",
                model=ctx.config.model,
                tools=ctx.config.tools,
                messages=ctx.prompt,
                callback_handler=None,
            )
            for _ in range(8):
                result = await agent.invoke_async()
                if _done(result.message):
                    break

    class MultiplyGrader(Grader):
        async def grade(self, ctx: Any) -> None:
            text = _answer(ctx.sample.messages[-1])
            ctx.set_reward(1.0 if text.removeprefix("####").strip() == ctx.label else 0.0)

    return MultiplyWorkflow, MultiplyGrader, config


# -- role: in process (the raw Strands floor, and LocalBackend without HTTP) -----------------


class _Variant:
    """One way of running a rollout in this process, with its accumulated figures."""

    def __init__(self, name: str, run_one: Any) -> None:
        self.name = name
        self.run_one = run_one
        self.cpu_s = 0.0
        self.wall_s = 0.0
        self.ok = 0

    async def batch(self, indices: range, concurrency: int, *, measure: bool = True) -> None:
        gate = asyncio.Semaphore(concurrency)

        async def one(index: int) -> bool:
            async with gate:
                return await self.run_one(index)

        cpu, wall = time.process_time(), time.perf_counter()
        results = await asyncio.gather(*(one(i) for i in indices))
        if measure:
            self.cpu_s += time.process_time() - cpu
            self.wall_s += time.perf_counter() - wall
            self.ok += sum(results)


async def _in_process(
    policy_url: str, rollouts: int, warmup: int, concurrency: int, stream: bool, rounds: int
) -> None:
    """Run the floor and the LocalBackend variant in alternating rounds in one process.

    Interleaving makes the comparison fair on a machine whose load drifts: both variants see
    the same conditions, the same warm caches and the same policy server.
    """
    from openai import AsyncOpenAI
    from strands import Agent
    from strands.models.openai import OpenAIModel

    from osmosis_ai.rollout import LocalBackend, RolloutContext
    from osmosis_ai.rollout.types import ExecutionRequest

    client = AsyncOpenAI(base_url=policy_url, api_key="bench", max_retries=0)
    multiply = _tool()

    async def raw_one(index: int) -> bool:
        # The cheapest hand-written Strands: one shared client, no osmosis anywhere.
        a, b = _operands(index)
        agent = Agent(
            name="multiply",
            model=OpenAIModel(
                client=client, model_id="osmosis-rollout", params={**PARAMS, "stream": stream}
            ),
            tools=[multiply],
            system_prompt=SYSTEM_PROMPT,
            messages=[{"role": "user", "content": [{"text": f"What is {a} times {b}?"}]}],
            callback_handler=None,
        )
        for _ in range(8):
            result = await agent.invoke_async()
            if _done(result.message):  # pyright: ignore[reportArgumentType]
                break
        return _answer(agent.messages[-1]) == f"#### {a * b}"  # pyright: ignore[reportArgumentType]

    workflow, grader, config = _template(stream)
    backend = LocalBackend(workflow=workflow, workflow_config=config, grader=grader)

    async def local_one(index: int) -> bool:
        # What the rollout server runs per rollout, minus HTTP: context, workflow, sample, grade.
        a, b = _operands(index)
        rollout_id = f"local-{index}"
        request = ExecutionRequest(id=rollout_id, prompt=_prompt(index), label=str(a * b))
        with RolloutContext(
            chat_completions_url=f"{policy_url}/rollouts/{rollout_id}",
            api_key="bench",
            rollout_id=rollout_id,
        ):
            outcome = await backend.execute(request)
        sample = outcome.result.sample
        return sample is not None and sample.reward == 1.0

    variants = [_Variant("raw", raw_one), _Variant("local", local_one)]
    for variant in variants:
        await variant.batch(range(10**6, 10**6 + warmup), concurrency, measure=False)
    per_round = max(1, rollouts // rounds)
    for number in range(rounds):
        indices = range(number * per_round, (number + 1) * per_round)
        for variant in variants if number % 2 == 0 else reversed(variants):
            await variant.batch(indices, concurrency)
    await backend.shutdown()
    await client.close()
    report = {
        v.name: {"cpu_s": v.cpu_s, "wall_s": v.wall_s, "ok": v.ok, "n": per_round * rounds}
        for v in variants
    }
    report["peak_rss_mb"] = peak_rss_mb()  # pyright: ignore[reportArgumentType]
    print(json.dumps(report), flush=True)


# -- role: rollout server ---------------------------------------------------------------------


def _serve(stream: bool, trajectories: bool) -> None:
    from osmosis_ai.rollout import LocalBackend

    workflow, grader, config = _template(stream)
    backend = LocalBackend(workflow=workflow, workflow_config=config, grader=grader)
    from bench_processes import serve_rollout_backend

    serve_rollout_backend(backend, save_trajectories=trajectories)


# -- the controller (this process) ------------------------------------------------------------


def _row(index: int) -> tuple[list[dict[str, Any]], str]:
    a, b = _operands(index)
    return _prompt(index), str(a * b)


async def _drive(
    server_url: str, policy_url: str, indices: range, concurrency: int
) -> tuple[int, float, list[str]]:
    """Admit every rollout (POST /rollout), long-poll each to its result; count rewards of 1."""
    from bench_processes import drive_rollouts

    return await drive_rollouts(server_url, policy_url, indices, concurrency, _row)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=512)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=64)
    parser.add_argument(
        "--no-stream", dest="stream", action="store_false", help="non-streaming policy calls"
    )
    parser.add_argument(
        "--no-trajectories",
        dest="trajectories",
        action="store_false",
        help="server does not write trajectory.json (to attribute its cost)",
    )
    parser.add_argument(
        "--rounds", type=int, default=4, help="alternating rounds of floor and LocalBackend"
    )
    parser.add_argument(
        "--role", choices=["controller", "inprocess", "server"], default="controller"
    )
    parser.add_argument("--policy-url", default="")
    args = parser.parse_args()

    if args.role == "inprocess":
        asyncio.run(
            _in_process(
                args.policy_url,
                args.rollouts,
                args.warmup,
                args.concurrency,
                args.stream,
                args.rounds,
            )
        )
        return
    if args.role == "server":
        _serve(args.stream, args.trajectories)
        return

    here = str(Path(__file__).resolve())
    mode = [] if args.stream else ["--no-stream"]
    print(
        f"multiply workload: {args.rollouts} rollouts at concurrency {args.concurrency} "
        f"({'streaming' if args.stream else 'non-streaming'}), instant scripted policy, "
        f"{os.cpu_count()} CPUs"
    )
    names = import_seconds(
        "from osmosis_ai.rollout.integrations.agents.strands import "
        "OsmosisRolloutModel, OsmosisStrandsAgent"
    )
    package = import_seconds("import osmosis_ai.rollout.integrations.agents.strands")
    framework = import_seconds("import strands")
    print(
        f"import: OsmosisStrandsAgent + OsmosisRolloutModel {names:.2f} s (`import strands` "
        f"alone {framework:.2f} s; the package itself, names resolved lazily, {package:.2f} s)"
    )

    with tempfile.TemporaryDirectory(prefix="osmosis-bench-") as scratch:
        env = scratch_env(scratch)
        policy, policy_url = spawn_policy(env)
        try:
            run = subprocess.run(
                [
                    sys.executable,
                    here,
                    "--role=inprocess",
                    f"--policy-url={policy_url}",
                    f"--rollouts={args.rollouts}",
                    f"--warmup={args.warmup}",
                    f"--concurrency={args.concurrency}",
                    f"--rounds={args.rounds}",
                    *mode,
                ],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
            figures = json.loads(run.stdout.strip().splitlines()[-1])
            ms: dict[str, float] = {}
            for key, label in (("raw", "raw Strands floor"), ("local", "LocalBackend, no HTTP")):
                f = figures[key]
                ms[key] = f["cpu_s"] * 1000 / f["n"]
                print(
                    f"{label}: {ms[key]:.2f} ms CPU/rollout, {f['n'] / f['wall_s']:.0f} "
                    f"rollouts/s, correct {f['ok']}/{f['n']}"
                )
            floor_ms = ms["raw"]
            print(
                f"  (same process, {args.rounds} alternating rounds, peak RSS "
                f"{figures['peak_rss_mb']:.0f} MB) integration + LocalBackend over floor: "
                f"{ms['local'] - floor_ms:+.2f} ms/rollout ({(ms['local'] / floor_ms - 1) * 100:+.0f} %)"
            )

            server_args = [here, "--role=server", *mode]
            if not args.trajectories:
                server_args.append("--no-trajectories")
            server, server_url = spawn(server_args, env)
            try:
                warm = range(10**6, 10**6 + args.warmup)
                asyncio.run(_drive(server_url, policy_url, warm, args.concurrency))
                before = proc_cpu_s(server.pid)
                rewarded, wall, failures = asyncio.run(
                    _drive(server_url, policy_url, range(args.rollouts), args.concurrency)
                )
                server_ms = (proc_cpu_s(server.pid) - before) * 1000 / args.rollouts
                peak = proc_peak_rss_mb(server.pid)
            finally:
                stop(server)
        finally:
            stop(policy)

    print(
        f"rollout server: {server_ms:.2f} ms server CPU/rollout, {args.rollouts / wall:.0f} "
        f"rollouts/s, peak RSS {peak:.0f} MB, reward 1.0 for {rewarded}/{args.rollouts}"
    )
    print(
        f"server over raw floor: {server_ms - floor_ms:+.2f} ms/rollout "
        f"({(server_ms / floor_ms - 1) * 100:+.0f} %)  [targets: <= 7 ms, <= +10 %]"
    )
    for failure in failures[:5]:
        print("  failed:", failure)


if __name__ == "__main__":
    main()
