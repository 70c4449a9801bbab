"""What the execution types cost per rollout (prints figures, never asserts).

    uv run python benchmarks/execution_types.py [--rollouts 20000]

The rollout server and ``LocalBackend`` build, per graded rollout: one ``ExecutionRequest`` (the
server uses ``model_construct``: its input has already been validated as a
``RolloutInitRequest``), two ``ExecutionResult`` (workflow, grader), one ``ExecutionOutcome``, and
read ``result``, ``wire_reward`` and ``result_to_save``. This times exactly that work, with and
without the ``RolloutSample`` both phases share, so that the cost of the types themselves can be
compared across checkouts (the types were dataclasses before ``3f9e653`` and are pydantic models
since, as in osmosis-ai 0.3.8). Run it in each checkout on one machine and compare; the server's
CPU per rollout (``benchmarks/server.py``) puts the difference in proportion.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable
from typing import Any

from osmosis_ai.rollout.types import RolloutSample
from osmosis_ai.rollout.types.enums import RolloutStatus
from osmosis_ai.rollout.types.execution import (
    ExecutionOutcome,
    ExecutionRequest,
    ExecutionResult,
)

PROMPT = [{"role": "user", "content": "What is 6 * 7?"}]
SUCCESS = RolloutStatus.SUCCESS


def _make_request() -> Callable[..., Any]:
    """``model_construct`` where the type is a pydantic model (the server's call), else the
    dataclass constructor."""
    return getattr(ExecutionRequest, "model_construct", ExecutionRequest)


def _types_work(sample: RolloutSample) -> tuple[Any, ...]:
    request = _make_request()(
        id="rollout-1",
        prompt=PROMPT,
        label="42",
        metadata=None,
        agent_timeout_sec=30.0,
        grader_timeout_sec=10.0,
        grade=True,
        chat_completions_url="http://127.0.0.1:9/v1/chat/completions",
        api_key=None,
        process_id="p",
    )
    workflow = ExecutionResult(status=SUCCESS, sample=sample)
    grader = ExecutionResult(status=SUCCESS, sample=sample)
    outcome = ExecutionOutcome(workflow=workflow, grader=grader)
    return request, outcome.result, outcome.wire_reward, outcome.result_to_save


def _best_us(fn: Callable[[], object], rollouts: int) -> float:
    return min(timeit.repeat(fn, number=rollouts, repeat=7)) / rollouts * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description="per-rollout CPU of the execution types")
    parser.add_argument("--rollouts", type=int, default=20000, help="rollouts per timing")
    args = parser.parse_args()
    shared = RolloutSample(messages=PROMPT, reward=1.0)
    types_only = _best_us(lambda: _types_work(shared), args.rollouts)
    with_sample = _best_us(
        lambda: _types_work(RolloutSample(messages=PROMPT, reward=1.0)), args.rollouts
    )
    kind = "pydantic" if hasattr(ExecutionRequest, "model_construct") else "dataclass"
    print(f"execution types ({kind}): {types_only:.2f} us per rollout")
    print(f"  with the RolloutSample built each time: {with_sample:.2f} us per rollout")


if __name__ == "__main__":
    main()
