"""Trajectory writer and config-copy CPU per rollout (prints figures, never asserts).

    uv run python benchmarks/trajectory.py [--rollouts 3000] [--concurrency 128] [--tmpfs]

The sample is the multiply rollout as the Strands integration records it (system, user,
assistant tool call, tool result, final answer; usage and model inline). Printed:

* ``convert`` / ``dumps``: ``convert_sample_to_trajectory`` and ``dumps_trajectory`` alone;
* ``_save_sync``: conversion, encoding and the atomic write of one file, on the calling thread;
* ``save_trajectory``: the public coroutine at the given concurrency, as the server calls it,
  CPU of the whole process (event loop + writer thread, including the kernel's file-system work)
  and of the event-loop thread alone;
* ``ConfigCopier.copy``: LocalBackend's per-rollout config copy of the Strands template config
  (an ``OsmosisRolloutModel`` and one ``@tool``), plain and with the tool type registered via
  ``share_in_config_copies`` (skipped when osmosis-strands is not installed).

The file-system part depends on the disk: ``--tmpfs`` puts the home under ``/dev/shm`` to see
the Python cost alone. Figures vary with the machine's load; compare runs on one machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Run as a script, this folder is sys.path[0], where benchmarks/strands.py would shadow the
# real `strands` package: drop the folder before anything imports Strands.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != _HERE]

USAGE = {"prompt_tokens": 30, "completion_tokens": 6, "total_tokens": 36}
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You multiply numbers. Use the multiply tool, then answer."},
    {"role": "user", "content": [{"text": "What is 10 times 12?", "type": "text"}]},
    {
        "role": "assistant",
        "tool_calls": [
            {
                "function": {"arguments": '{"a": 10, "b": 12}', "name": "multiply"},
                "id": "call_00000001_0",
                "type": "function",
            }
        ],
        "model": "scripted-policy",
        "usage": USAGE,
    },
    {"role": "tool", "tool_call_id": "call_00000001_0", "content": "120"},
    {
        "role": "assistant",
        "content": [{"text": "#### 120", "type": "text"}],
        "model": "scripted-policy",
        "usage": {"prompt_tokens": 37, "completion_tokens": 2, "total_tokens": 39},
    },
]


def per_call_us(fn: Callable[[int], Any], n: int) -> float:
    fn(-1)
    start = time.process_time()
    for i in range(n):
        fn(i)
    return (time.process_time() - start) / n * 1e6


async def concurrent_saves(result: Any, n: int, concurrency: int) -> tuple[float, float]:
    from osmosis_ai.rollout.trajectory import save_trajectory

    await asyncio.gather(
        *(save_trajectory(rollout_id=f"warm-{i}", result=result) for i in range(concurrency))
    )
    cpu0, loop0, done = time.process_time(), time.thread_time(), 0
    while done < n:
        await asyncio.gather(
            *(
                save_trajectory(rollout_id=f"r-{done + i}", result=result)
                for i in range(concurrency)
            )
        )
        done += concurrency
    return (time.process_time() - cpu0) / done * 1e6, (time.thread_time() - loop0) / done * 1e6


def config_copy(n: int) -> None:
    try:
        from strands import tool
        from strands.models.model import Model
        from strands.tools.decorator import DecoratedFunctionTool

        from osmosis_ai.rollout.integrations.agents.strands import (  # pyright: ignore[reportMissingImports]
            OsmosisRolloutModel,
        )
    except ImportError:
        print("ConfigCopier.copy: skipped (osmosis-strands is not installed)")
        return
    from osmosis_ai.rollout import AgentWorkflowConfig
    from osmosis_ai.rollout.backend.local._loading import ConfigCopier, share_in_config_copies

    @tool
    def multiply(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    class MultiplyConfig(AgentWorkflowConfig):
        model: Model
        tools: Any

    config = MultiplyConfig(
        name="multiply", model=OsmosisRolloutModel(params={"max_tokens": 64}), tools=[multiply]
    )
    copier = ConfigCopier(config)
    plain = per_call_us(lambda _: copier.copy(), n)
    share_in_config_copies(DecoratedFunctionTool)
    shared = per_call_us(lambda _: copier.copy(), n)
    print(
        f"ConfigCopier.copy (Strands template): {plain:7.1f} us deep copy; "
        f"{shared:7.1f} us with the @tool type registered as shared"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--tmpfs", action="store_true", help="home under /dev/shm")
    args = parser.parse_args()
    base = "/dev/shm" if args.tmpfs else None
    with tempfile.TemporaryDirectory(prefix="osmosis-trajbench-", dir=base) as home:
        os.environ["OSMOSIS_HOME"] = home
        os.environ.pop("_OSMOSIS_ROLLOUT_ARTIFACT_ROOT", None)
        from osmosis_ai.rollout import RolloutSample, RolloutStatus
        from osmosis_ai.rollout.trajectory import convert_sample_to_trajectory, dumps_trajectory
        from osmosis_ai.rollout.trajectory.writer import _save_sync
        from osmosis_ai.rollout.types.execution import ExecutionResult

        sample = RolloutSample(messages=MESSAGES, label="120", reward=1.0)
        result = ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample)
        n = args.rollouts
        doc = convert_sample_to_trajectory(sample, rollout_id="r", status="success")
        assert doc is not None
        where = "tmpfs" if args.tmpfs else "disk"
        print(f"trajectory of a {len(MESSAGES)}-message rollout, {n} rollouts, home on {where}")
        convert = per_call_us(
            lambda i: convert_sample_to_trajectory(sample, rollout_id=f"r{i}", status="success"),
            n,
        )
        print(f"convert_sample_to_trajectory: {convert:7.1f} us")
        print(
            f"dumps_trajectory:             {per_call_us(lambda _: dumps_trajectory(doc), n):7.1f} us"
        )
        sync_root = Path(home) / "sync"

        def save_sync(i: int) -> None:
            _save_sync(
                rollout_id=f"s{i}",
                result=result,
                request_label="120",
                request_metadata=None,
                request_extra_fields=None,
                report=None,
                root=sync_root,
                prune=False,
                diagnostics=None,
            )

        print(f"_save_sync (convert+encode+write): {per_call_us(save_sync, n):7.1f} us")
        total, loop = asyncio.run(concurrent_saves(result, n, args.concurrency))
        print(
            f"save_trajectory @C={args.concurrency}: {total:7.1f} us CPU/rollout (process), "
            f"{loop:7.1f} us on the event-loop thread"
        )
        config_copy(min(n, 2000))


if __name__ == "__main__":
    main()
