"""Many rollouts in one process and one event loop: each sample holds only its own conversation."""

from __future__ import annotations

import asyncio
import re

from strands_multiply_rollout import (
    MultiplyGrader,
    MultiplyWorkflow,
    multiply_prompt,
    multiply_workflow_config,
)

from osmosis_ai.rollout.integrations.agents.strands import OsmosisRolloutModel
from osmosis_ai.rollout.types import RolloutStatus
from osmosis_ai.testing import ScriptedPolicyServer, run_rollout

ROLLOUTS = 200
_INT = re.compile(r"-?\d+")


async def test_200_concurrent_rollouts_do_not_cross_talk() -> None:
    # Half the rollouts stream and half do not, all through one shared client per event loop.
    configs = [
        multiply_workflow_config.model_copy(
            update={"model": OsmosisRolloutModel(params={"stream": stream})}
        )
        for stream in (True, False)
    ]
    # Distinct operands per rollout: rollout i multiplies (1000 + i) by (i + 2).
    operands = {f"r{i}": (1000 + i, i + 2) for i in range(ROLLOUTS)}
    async with ScriptedPolicyServer("multiply", max_recorded=4 * ROLLOUTS) as policy:
        results = await asyncio.gather(
            *(
                run_rollout(
                    MultiplyWorkflow,
                    MultiplyGrader,
                    prompt=multiply_prompt(a, b),
                    label=str(a * b),
                    policy=policy,
                    workflow_config=configs[int(rollout_id[1:]) % 2],
                    rollout_id=rollout_id,
                    api_key=f"key-{rollout_id}",
                )
                for rollout_id, (a, b) in operands.items()
            )
        )
        requests = policy.requests

    for result in results:
        a, b = operands[result.rollout_id]
        assert result.status == RolloutStatus.SUCCESS, result.err_message
        assert result.reward == 1.0
        assert result.sample is not None
        messages = result.sample.messages
        assert len(messages) == 4
        assert messages[0]["content"] == [{"text": f"What is {a} times {b}?"}]
        assert messages[1]["content"][0]["toolUse"]["input"] == {"a": a, "b": b}
        assert messages[-1]["content"] == [{"text": f"#### {a * b}"}]
        numbers = {int(n) for n in _INT.findall(str(result.sample.trajectory_messages))}
        foreign = {1000 + i for i in range(ROLLOUTS)} - {a}
        assert not numbers & foreign, f"{result.rollout_id} saw another rollout's operands"

    # Every request reached the scope of the rollout whose conversation it carried.
    assert len(requests) == 2 * ROLLOUTS
    for request in requests:
        assert request.rollout_id is not None
        a, b = operands[request.rollout_id]
        assert request.bearer_token == f"key-{request.rollout_id}"
        assert f"What is {a} times {b}?" in str(request.messages)
        assert request.stream is (int(request.rollout_id[1:]) % 2 == 0)
