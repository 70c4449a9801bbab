"""HarborBackend: real Harbor trials per second and where a trial's time goes.

Runs rollouts through ``HarborBackend`` on ``TrialQueue(n_concurrent=8)`` in the Docker-free
local sandbox (the environment tests use; production swaps in SkyPilot or Docker, so the
environment-start figure here is the floor, not a SkyPilot figure). Two workloads:

* **oracle** — Harbor's oracle agent runs the task's ``solve.sh``, the task's ``test.sh``
  scores it: the cost of the trial machinery itself (environment, agent, verifier, result);
* **workflow** — the AgentWorkflow track: the rollout project is bundled into a wheel
  (built once, content-addressed), installed in every sandbox, and run there by the in-sandbox
  runner; it calls a scripted multiply policy on 127.0.0.1 (tool call, then ``#### <n>``) and
  the SDK grader scores it through a generated verifier.

It prints rollouts/s and the median / p90 seconds of each trial phase (environment start, agent
setup, agent, verifier) as Harbor records them. Nothing is asserted.

    uv run python benchmarks/harbor.py                        # 32 oracle + 16 workflow rollouts
    uv run python benchmarks/harbor.py --oracle 64 --workflow 32 --concurrency 8

Figures depend on the machine and on what else runs on it; compare runs on one machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Run as a script, this file's directory is sys.path[0] and this file would shadow the `harbor`
# package it measures.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

PHASES = ("environment_setup", "agent_setup", "agent_execution", "verifier")

WORKFLOW_SOURCE = """
import json

import httpx

from osmosis_ai.rollout.agent_workflow import AgentWorkflow
from osmosis_ai.rollout.context import get_rollout_context
from osmosis_ai.rollout.grader import Grader

TOOL = {"type": "function", "function": {"name": "multiply", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}}


class Multiply(AgentWorkflow):
    async def run(self, ctx):
        rollout = get_rollout_context()
        messages = list(ctx.prompt)
        async with httpx.AsyncClient(timeout=30) as client:
            for _ in range(4):
                reply = await client.post(
                    rollout.chat_completions_url + "/chat/completions",
                    json={"model": "policy", "messages": messages, "tools": [TOOL]},
                )
                message = reply.json()["choices"][0]["message"]
                messages.append(message)
                if not message.get("tool_calls"):
                    return messages
                for call in message["tool_calls"]:
                    args = json.loads(call["function"]["arguments"])
                    messages.append({"role": "tool", "tool_call_id": call["id"],
                                     "content": str(args["a"] * args["b"])})
        return messages


class Exact(Grader):
    async def grade(self, ctx):
        text = str(ctx.sample.messages[-1].get("content") or "")
        ctx.set_reward(1.0 if text.strip() == "#### " + str(ctx.label) else 0.0)
"""


def _write_task(root: Path, *, with_solution: bool) -> Path:
    (root / "environment").mkdir(parents=True)
    (root / "environment" / "Dockerfile").write_text("FROM python:3.12-slim\nWORKDIR /app\n")
    (root / "task.toml").write_text('schema_version = "1.3"\n[environment]\nworkdir = "/app"\n')
    (root / "instruction.md").write_text("Create /app/hello.txt containing hello.\n")
    if with_solution:
        for name, body in (
            ("solution/solve.sh", "echo hello > /app/hello.txt"),
            (
                "tests/test.sh",
                "grep -q hello /app/hello.txt && echo 1 > /logs/verifier/reward.txt "
                "|| echo 0 > /logs/verifier/reward.txt",
            ),
        ):
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"#!/bin/bash\n{body}\n")
            path.chmod(0o755)
    return root


def _quantiles(values: list[float]) -> str:
    if not values:
        return "n/a"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return f"median {statistics.median(ordered):6.3f} s   p90 {p90:6.3f} s"


async def _run_batch(
    backend: Any, count: int, prefix: str, url_for: Any, label_for: Any
) -> tuple[float, list[Any]]:
    from osmosis_ai.rollout.context import RolloutContext
    from osmosis_ai.rollout.types.execution import ExecutionRequest

    async def one(i: int) -> Any:
        rid = f"{prefix}-{i}"
        prompt = [{"role": "user", "content": f"What is {i + 2} times 7?"}]
        with RolloutContext(chat_completions_url=url_for(rid), rollout_id=rid):
            return await backend.execute(
                ExecutionRequest(id=rid, prompt=prompt, label=label_for(i))
            )

    started = time.perf_counter()
    outcomes = await asyncio.gather(*(one(i) for i in range(count)))
    return time.perf_counter() - started, outcomes


def _report(name: str, elapsed: float, outcomes: list[Any], concurrency: int) -> None:
    rewards = [o.result.sample.reward for o in outcomes if o.result.sample is not None]
    ok = sum(1 for o in outcomes if o.result.status == "success")
    print(f"\n{name}: {len(outcomes)} rollouts, TrialQueue(n_concurrent={concurrency})")
    print(f"  wall {elapsed:7.2f} s   {len(outcomes) / elapsed:6.2f} rollouts/s   success {ok}")
    print(f"  mean reward {statistics.fmean(rewards) if rewards else float('nan'):.3f}")
    for phase in PHASES:
        values = [
            t
            for o in outcomes
            if o.workflow.extra_fields
            for t in [o.workflow.extra_fields["harbor_timings"].get(phase)]
            if t is not None
        ]
        print(f"  {phase:<18} {_quantiles(values)}")
    failures = [o.result.err_message for o in outcomes if o.result.status != "success"]
    if failures:
        print(f"  first failure: {failures[0]}")


async def main(args: argparse.Namespace) -> None:
    from harbor.models.job.config import RetryConfig
    from harbor.trial.queue import TrialQueue

    from osmosis_ai.rollout.backend.harbor import HarborBackend, local_environment_config
    from osmosis_ai.testing import ScriptedPolicyServer

    with tempfile.TemporaryDirectory(prefix="osmosis-harbor-bench-") as tmp:
        root = Path(tmp)
        os.environ["OSMOSIS_HOME"] = str(root / "home")
        queue = TrialQueue(n_concurrent=args.concurrency, retry_config=RetryConfig(max_retries=0))
        environment = local_environment_config()

        if args.oracle:
            task = _write_task(root / "hello", with_solution=True)
            backend = HarborBackend(
                orchestrator=queue, tasks_dir=task, agent="oracle", environment_config=environment
            )
            # One warm-up trial so the first import of Harbor's trial stack is not counted.
            await _run_batch(backend, 1, "warm", lambda rid: "http://127.0.0.1:9/v1", str)
            elapsed, outcomes = await _run_batch(
                backend, args.oracle, "oracle", lambda rid: "http://127.0.0.1:9/v1", str
            )
            _report("oracle (trial machinery)", elapsed, outcomes, args.concurrency)
            await backend.shutdown()

        if args.workflow:
            project = root / "project"
            project.mkdir()
            (project / "bench_flow.py").write_text(WORKFLOW_SOURCE)
            sys.path.insert(0, str(project))
            task = _write_task(root / "open", with_solution=False)
            backend = HarborBackend(
                orchestrator=queue,
                tasks_dir=task,
                agent="bench_flow:Multiply",
                grader="bench_flow:Exact",
                environment_config=environment,
            )
            started = time.perf_counter()
            await backend.prewarm()
            print(
                f"\nbundle build + one install-only trial (prewarm): "
                f"{time.perf_counter() - started:.2f} s"
            )
            async with ScriptedPolicyServer("multiply") as policy:
                elapsed, outcomes = await _run_batch(
                    backend,
                    args.workflow,
                    "workflow",
                    policy.chat_completions_url,
                    lambda i: str((i + 2) * 7),
                )
                calls = len(policy.requests)
            _report(
                "workflow (bundle + in-sandbox runner + SDK grader)",
                elapsed,
                outcomes,
                args.concurrency,
            )
            print(f"  policy calls from inside the sandboxes: {calls}")
            await backend.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--oracle", type=int, default=32, help="oracle rollouts (0 to skip)")
    parser.add_argument("--workflow", type=int, default=16, help="workflow rollouts (0 to skip)")
    parser.add_argument("--concurrency", type=int, default=8, help="TrialQueue n_concurrent")
    asyncio.run(main(parser.parse_args()))
