"""The Strands template through a rollout server running rollouts in 2 worker processes."""

from __future__ import annotations

import os
from pathlib import Path

from strands_multiply_rollout import multiply_prompt

from osmosis_ai.rollout.client import RolloutClient
from osmosis_ai.rollout.entrypoint import load_rollout_app
from osmosis_ai.rollout.server._impl.workers.pool import use_workers
from osmosis_ai.rollout.types import RolloutStatus
from osmosis_ai.testing import ScriptedPolicyServer, serve_app

ROLLOUT_DIR = Path(__file__).parent / "worker_rollout"


async def test_template_earns_reward_one_through_two_worker_processes(osmosis_home: Path) -> None:
    app = load_rollout_app(ROLLOUT_DIR, "main.py")
    pool = use_workers(app, 2)
    async with (
        ScriptedPolicyServer("multiply") as policy,
        serve_app(app, start_timeout_sec=300) as url,
        RolloutClient(url=url) as client,
    ):
        handles = [
            await client.run_rollout_async(
                multiply_prompt(3 + i, 7),
                policy.chat_completions_url(f"w{i}"),
                f"w{i}",
                llm_api_key="policy-key",
                label=str((3 + i) * 7),
            )
            for i in range(4)
        ]
        results = [await handle for handle in handles]
        worker_pids = {w.pid for w in pool.workers}
        requests = policy.requests

    for result in results:
        assert result.status == RolloutStatus.SUCCESS, result.err_message
        assert result.sample is not None
        assert result.sample.reward == 1.0
    pids = {int((osmosis_home / f"w{i}" / "artifacts" / "pid.txt").read_text()) for i in range(4)}
    assert pids <= worker_pids
    assert os.getpid() not in pids
    assert len(requests) == 8  # a tool call and an answer per rollout, from inside the workers
    assert {r.bearer_token for r in requests} == {"policy-key"}
    assert all((osmosis_home / f"w{i}" / "trajectory.json").exists() for i in range(4))
