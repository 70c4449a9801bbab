"""The OpenAI Agents template through a rollout server running rollouts in 2 worker processes."""

from __future__ import annotations

from pathlib import Path

from osmosis_ai.testing import check_rollouts_in_worker_processes

ROLLOUT_DIR = Path(__file__).parent / "worker_rollout"


async def test_template_earns_reward_one_through_two_worker_processes(osmosis_home: Path) -> None:
    await check_rollouts_in_worker_processes(ROLLOUT_DIR, osmosis_home, workers=2)
