"""A rollout server in its own process, for drain and crash tests.

``python server_main.py PORT OUTBOX_DIR GRACE_SEC [OPTIONS_JSON]`` (more
``create_rollout_server`` keywords). Each rollout sleeps ``metadata["seconds"]`` and succeeds
with reward 1.0.
"""

from __future__ import annotations

import asyncio
import json
import sys

from osmosis_ai.rollout.backend.base import ExecutionBackend
from osmosis_ai.rollout.context import RolloutProgress
from osmosis_ai.rollout.server import create_rollout_server, serve
from osmosis_ai.rollout.types import (
    ExecutionOutcome,
    ExecutionRequest,
    ExecutionResult,
    RolloutSample,
    RolloutStatus,
)


class Sleepy(ExecutionBackend):
    async def execute(
        self, request: ExecutionRequest, progress: RolloutProgress | None = None
    ) -> ExecutionOutcome:
        if progress is not None:
            await progress.set_status(RolloutStatus.RUNNING)
        await asyncio.sleep(float((request.metadata or {}).get("seconds", 0)))
        sample = RolloutSample(messages=[{"role": "assistant", "content": "ok"}], reward=1.0)
        return ExecutionOutcome(
            workflow=ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample)
        )


def main() -> None:
    port, outbox, grace = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    options = {"cancel_cleanup_sec": 1, "save_trajectories": False}
    options.update(json.loads(sys.argv[4]) if len(sys.argv) > 4 else {})
    app = create_rollout_server(
        backend=Sleepy(), outbox_dir=outbox, drain_grace_sec=grace, **options
    )
    serve(app, port=port, log_level="warning")


if __name__ == "__main__":
    main()
