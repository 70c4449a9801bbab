"""OpenAI Agents SDK integration: rollout-server cost per rollout vs the raw SDK floor.

Runs the multiply workload (a ``@function_tool`` agent: one tool call, then ``#### <product>``)
against an instant scripted policy (``python -m osmosis_ai.testing.policy_server``, its own
process) in two ways, each in its own process so CPU is attributed exactly:

* **raw floor** — the same agent as plain ``agents.Agent`` + ``OpenAIChatCompletionsModel`` on
  one shared ``AsyncOpenAI``, ``Runner.run`` at the given concurrency, no osmosis at all;
* **rollout server** — ``create_rollout_server(LocalBackend(...))`` under uvicorn, driven over
  real HTTP by a poll-protocol controller in this process (``POST /rollout``, long polls of
  ``GET /rollout/{id}/result``), with the template workflow (``OsmosisAgent``,
  ``OsmosisRolloutModel``, ``OsmosisMemorySession``), grading and trajectory saving.

It prints CPU ms per rollout of the process doing the work, rollouts/s, peak RSS, the overhead
of the server over the floor, and the integration's import time. Nothing is asserted: the
issue's targets are <= 9 ms server CPU per rollout, <= 10 % over the floor, import <= 2.5 s.

    uv run python benchmarks/openai_agents.py                 # 512 rollouts at concurrency 128
    uv run python benchmarks/openai_agents.py --rollouts 2000 --stream

Figures depend on the machine and on what else runs on it; compare runs on one machine.
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
)

PROMPT = "What is {a} times {b}?"
INSTRUCTIONS = "You multiply numbers. Use the multiply tool, then answer as '#### <number>'."


# -- the workload (imported by both worker processes) -----------------------------------------


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def _settings() -> Any:
    from agents import ModelSettings

    return ModelSettings(temperature=1.0, top_p=1.0, max_tokens=1024)


def _template_classes(stream: bool) -> tuple[type, type]:
    """The workflow and grader exactly as the public SDK's OpenAI Agents template writes them."""
    from agents import Runner, function_tool

    from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext, Grader, GraderContext
    from osmosis_ai.rollout.integrations.agents.openai_agents import (
        OsmosisAgent,
        OsmosisMemorySession,
        OsmosisRolloutModel,
    )

    agent = OsmosisAgent(
        name="multiplier",
        instructions=INSTRUCTIONS,
        model=OsmosisRolloutModel(),
        model_settings=_settings(),
        tools=[function_tool(multiply)],
    )

    class MultiplyWorkflow(AgentWorkflow):
        async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
            session = OsmosisMemorySession()
            if stream:
                result = Runner.run_streamed(agent, ctx.prompt, session=session, max_turns=8)  # pyright: ignore[reportArgumentType]
                async for _ in result.stream_events():
                    pass
            else:
                await Runner.run(agent, ctx.prompt, session=session, max_turns=8)  # pyright: ignore[reportArgumentType]

    class MultiplyGrader(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            assert ctx.sample is not None
            last = ctx.sample.messages[-1]
            text = "".join(p.get("text", "") for p in last.get("content") or [])
            ctx.set_reward(1.0 if text.removeprefix("####").strip() == ctx.label else 0.0)

    return MultiplyWorkflow, MultiplyGrader


def _operands(index: int) -> tuple[int, int]:
    return 3 + index % 97, 5 + index % 89


# -- role: raw OpenAI Agents floor ------------------------------------------------------------


async def _raw(policy_url: str, rollouts: int, warmup: int, concurrency: int, stream: bool) -> None:
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # the floor: no span building, nothing uploaded
    client = AsyncOpenAI(base_url=policy_url, api_key="bench", max_retries=0)
    agent = Agent(
        name="multiplier",
        instructions=INSTRUCTIONS,
        model=OpenAIChatCompletionsModel(model="osmosis-rollout", openai_client=client),
        model_settings=_settings(),
        tools=[function_tool(multiply)],
    )
    gate = asyncio.Semaphore(concurrency)
    correct = 0

    async def one(index: int) -> None:
        nonlocal correct
        a, b = _operands(index)
        async with gate:
            if stream:
                result = Runner.run_streamed(agent, PROMPT.format(a=a, b=b), max_turns=8)
                async for _ in result.stream_events():
                    pass
            else:
                result = await Runner.run(agent, PROMPT.format(a=a, b=b), max_turns=8)
        correct += result.final_output == f"#### {a * b}"

    await asyncio.gather(*(one(i) for i in range(warmup)))
    correct = 0
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(rollouts)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    await client.close()
    print(
        json.dumps({"cpu_s": cpu, "wall_s": wall, "ok": correct, "peak_rss_mb": peak_rss_mb()}),
        flush=True,
    )


# -- role: rollout server ---------------------------------------------------------------------


def _serve(concurrency: int, stream: bool, save_trajectories: bool) -> None:
    from osmosis_ai.rollout import AgentWorkflowConfig, ConcurrencyConfig, LocalBackend

    workflow, grader = _template_classes(stream)
    backend = LocalBackend(
        workflow=workflow,
        grader=grader,
        workflow_config=AgentWorkflowConfig(
            name="multiply", concurrency=ConcurrencyConfig(max_concurrent=concurrency)
        ),
    )
    from bench_processes import serve_rollout_backend

    serve_rollout_backend(backend, save_trajectories=save_trajectories)


# -- the controller (this process) ------------------------------------------------------------


def _row(index: int) -> tuple[list[dict[str, Any]], str]:
    a, b = _operands(index)
    return [{"role": "user", "content": PROMPT.format(a=a, b=b)}], str(a * b)


async def _drive(
    server_url: str, policy_url: str, rollouts: int, offset: int, concurrency: int
) -> tuple[int, float, list[str]]:
    indices = range(offset, offset + rollouts)
    from bench_processes import drive_rollouts

    return await drive_rollouts(server_url, policy_url, indices, concurrency, _row)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=512)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=64)
    parser.add_argument("--stream", action="store_true", help="Runner.run_streamed instead of run")
    parser.add_argument(
        "--no-trajectories", action="store_true", help="server: skip ATIF trajectory saving"
    )
    parser.add_argument("--role", choices=["controller", "raw", "server"], default="controller")
    parser.add_argument("--policy-url", default="")
    args = parser.parse_args()

    if args.role == "raw":
        asyncio.run(
            _raw(args.policy_url, args.rollouts, args.warmup, args.concurrency, args.stream)
        )
        return
    if args.role == "server":
        _serve(args.concurrency, args.stream, not args.no_trajectories)
        return

    here = str(Path(__file__).resolve())
    common = ["--concurrency", str(args.concurrency)] + (["--stream"] if args.stream else [])
    print(
        f"multiply workload: {args.rollouts} rollouts at concurrency {args.concurrency} "
        f"({'run_streamed' if args.stream else 'Runner.run'}"
        f"{', no trajectories' if args.no_trajectories else ''}), instant scripted policy, "
        f"{os.cpu_count()} CPUs"
    )
    integration = import_seconds(
        "import osmosis_ai.rollout.integrations.agents.openai_agents as m; m.OsmosisAgent"
    )
    sdk = import_seconds("import agents")
    print(f"import: integration {integration:.2f} s (of which `import agents` {sdk:.2f} s)")

    with tempfile.TemporaryDirectory(prefix="osmosis-bench-") as scratch:
        env = scratch_env(scratch)
        policy, policy_url = spawn_policy(env)
        try:
            raw = subprocess.run(
                [
                    sys.executable,
                    here,
                    "--role",
                    "raw",
                    "--policy-url",
                    policy_url,
                    "--rollouts",
                    str(args.rollouts),
                    "--warmup",
                    str(args.warmup),
                    *common,
                ],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
            floor = json.loads(raw.stdout.strip().splitlines()[-1])
            floor_ms = floor["cpu_s"] * 1000 / args.rollouts
            print(
                f"raw OpenAI Agents floor: {floor_ms:.2f} ms CPU/rollout, "
                f"{args.rollouts / floor['wall_s']:.0f} rollouts/s, "
                f"peak RSS {floor['peak_rss_mb']:.0f} MB, correct {floor['ok']}/{args.rollouts}"
            )

            server_args = ["--no-trajectories"] if args.no_trajectories else []
            server, server_url = spawn([here, "--role", "server", *common, *server_args], env)
            try:
                asyncio.run(_drive(server_url, policy_url, args.warmup, 10**6, args.concurrency))
                before = proc_cpu_s(server.pid)
                policy_before, driver_before = proc_cpu_s(policy.pid), time.process_time()
                rewarded, wall, failures = asyncio.run(
                    _drive(server_url, policy_url, args.rollouts, 0, args.concurrency)
                )
                server_ms = (proc_cpu_s(server.pid) - before) * 1000 / args.rollouts
                policy_ms = (proc_cpu_s(policy.pid) - policy_before) * 1000 / args.rollouts
                driver_ms = (time.process_time() - driver_before) * 1000 / args.rollouts
                peak = proc_peak_rss_mb(server.pid)
            finally:
                server.terminate()
                server.wait(timeout=30)
        finally:
            policy.terminate()
            policy.wait(timeout=30)

    print(
        f"rollout server: {server_ms:.2f} ms server CPU/rollout, {args.rollouts / wall:.0f} "
        f"rollouts/s, peak RSS {peak:.0f} MB, reward 1.0 for {rewarded}/{args.rollouts}"
    )
    print(
        f"  (same machine, same time: controller {driver_ms:.2f} ms and scripted policy "
        f"{policy_ms:.2f} ms CPU/rollout, which bound rollouts/s on few cores)"
    )
    print(
        f"server over raw floor: {server_ms - floor_ms:+.2f} ms/rollout "
        f"({(server_ms / floor_ms - 1) * 100:+.0f} %)  [targets: <= 9 ms, <= +10 %]"
    )
    for failure in failures[:5]:
        print("  failed:", failure)


if __name__ == "__main__":
    main()
