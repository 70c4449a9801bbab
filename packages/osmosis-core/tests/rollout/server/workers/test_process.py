"""The server's side of one worker's channel, without processes: how finished rollouts are
taken in (a few per loop turn) and what an unreadable result becomes."""

from __future__ import annotations

import asyncio

from osmosis_ai.rollout.server._impl.workers.channel import encode_outcome
from osmosis_ai.rollout.server._impl.workers.process import ResultIntake, WorkerProcess
from osmosis_ai.rollout.types import (
    ExecutionOutcome,
    ExecutionResult,
    RolloutErrorCategory,
    RolloutStatus,
)


async def test_results_are_taken_a_few_per_loop_turn() -> None:
    intake = ResultIntake(per_turn=3)
    seen: list[str] = []
    loop = asyncio.get_running_loop()

    def tick() -> None:  # marks every loop turn
        seen.append("|")
        if seen.count("|") < 50:
            loop.call_soon(tick)

    async def take(name: str, n: int) -> None:
        for _ in range(n):
            await intake.turn()
            seen.append(name)

    loop.call_soon(tick)
    await asyncio.gather(take("a", 7), take("b", 4))  # two workers share one intake
    turns = [group for group in "".join(seen).split("|") if group]
    assert max(len(group) for group in turns) <= 3
    assert "".join(turns).count("a") == 7
    assert "".join(turns).count("b") == 4


def _worker() -> WorkerProcess:
    return WorkerProcess(0, {}, lambda _worker: None)


def test_a_result_is_decoded_when_it_is_taken() -> None:
    result = ExecutionResult(status=RolloutStatus.SUCCESS)
    outcome = _worker()._outcome("r1", encode_outcome(ExecutionOutcome(workflow=result)))
    assert outcome == ExecutionOutcome(workflow=result)
    assert _worker()._outcome("r1", None) is None  # the worker cancelled it


def test_an_unreadable_result_fails_only_its_rollout() -> None:
    outcome = _worker()._outcome("r1", b"not a pickle")
    assert outcome is not None
    assert outcome.result.status == RolloutStatus.FAILURE
    assert outcome.result.err_category == RolloutErrorCategory.INTERNAL_ERROR
    assert "could not read the result the worker process sent" in (outcome.result.err_message or "")
