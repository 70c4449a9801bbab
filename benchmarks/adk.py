"""Google ADK integration: agent-process CPU per rollout with the adapter vs raw ADK.

Runs the multiply workload (an ``LlmAgent`` with a ``multiply`` tool: one tool call, then
``#### <product>``) against an instant scripted policy (``python -m
osmosis_ai.testing.policy_server``, its own process) in two ways, each in its own process so
CPU is attributed exactly:

* **raw** — the agent on ADK's own route to an OpenAI-compatible endpoint,
  ``LiteLlm(model="openai/osmosis-rollout", api_base=<policy>)``, run by an ``InMemoryRunner``
  in a fresh session per rollout; no osmosis at all;
* **adapter** — the same agent on ``OsmosisRolloutModel``, run by ``run_agent`` inside a
  ``RolloutContext`` (late binding, events and wire copy recorded), its sample built at the end.

The rollout server's own cost (HTTP, grading, trajectories) is the same for every framework and
is measured by ``benchmarks/server.py``; this isolates what the adapter adds. It also prints the
import times. Nothing is asserted. LiteLLM is not a dependency of osmosis-adk; run with it::

    uv run --with litellm python benchmarks/adk.py     # 256 rollouts at concurrency 64
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

_INSTRUCTION = "Use the tool, answer as '#### <n>'."


def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


def _agent(adapter: bool, url: str) -> Any:
    from google.adk.agents import LlmAgent
    from google.genai import types

    if adapter:
        from osmosis_ai.rollout.integrations.agents.adk import OsmosisRolloutModel

        model: Any = OsmosisRolloutModel()
    else:
        from google.adk.models.lite_llm import LiteLlm

        model = LiteLlm(model="openai/osmosis-rollout", api_base=url, api_key="EMPTY")
    config = types.GenerateContentConfig(temperature=1.0, max_output_tokens=1024)
    return LlmAgent(
        name="multiplier", model=model, instruction=_INSTRUCTION, tools=[multiply],
        generate_content_config=config,
    )  # fmt: skip


async def _raw(agent: Any, text: str) -> str:
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    runner = InMemoryRunner(agent=agent, app_name="bench")
    session = await runner.session_service.create_session(app_name="bench", user_id="u")
    message = types.Content(role="user", parts=[types.Part.from_text(text=text)])
    answer = ""
    async for event in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        if event.content and event.content.parts and event.content.parts[0].text:
            answer = event.content.parts[0].text
    return answer


async def _run(adapter: bool, url: str, rollouts: int, warmup: int, concurrency: int) -> dict:
    from osmosis_ai.rollout import RolloutContext
    from osmosis_ai.rollout.integrations.agents.adk import run_agent

    agent = _agent(adapter, url)
    gate = asyncio.Semaphore(concurrency)
    ok = 0

    async def one(i: int) -> None:
        nonlocal ok
        text = f"What is {i % 97} times {i % 13 + 2}?"
        async with gate:
            if not adapter:
                answer = await _raw(agent, text)  # awaited first: `ok += await ...` loses counts
                ok += answer.startswith("####")
                return
            with RolloutContext(chat_completions_url=url, api_key="k", rollout_id=f"r{i}") as ctx:
                await run_agent(agent, text)
                assert ctx.sample_source is not None
                sample = await ctx.sample_source.get_sample()
                parts = sample.messages[-1]["content"]["parts"]
                ok += str(parts[0].get("text", "")).startswith("####")

    await asyncio.gather(*(one(i) for i in range(warmup)))
    ok = 0
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(rollouts)))
    return {"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall, "ok": ok}


def _import_seconds(statement: str, repeats: int = 3) -> float:
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    runs = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.strip().splitlines()[-1])
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

    # What an ADK agent module imports anyway: agents, runners and genai types.
    framework = _import_seconds(
        "import google.adk.agents, google.adk.runners, google.adk.models.base_llm, google.genai"
    )
    integration = _import_seconds(
        "import osmosis_ai.rollout.integrations.agents.adk as m; m.OsmosisRolloutModel; m.run_agent"
    )
    print(
        f"import: framework {framework:.2f} s, integration (framework included) {integration:.2f} s"
    )
    try:
        litellm = _import_seconds("import google.adk.models.lite_llm, litellm")
        print(f"import: the raw route (framework + LiteLlm) {litellm:.2f} s")
    except subprocess.CalledProcessError:
        print("import: LiteLLM is not installed (uv run --with litellm ...)")
    # LiteLLM would fetch its cost map from the network at import.
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
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
