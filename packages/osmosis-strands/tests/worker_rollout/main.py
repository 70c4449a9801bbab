"""The Strands template rollout as a served entrypoint, for the 2-worker-process test: each worker
imports this file and rebuilds the backend from ``app``. The workflow is the template's, plus a
note of the process it ran in."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from strands_multiply_rollout import (
    MultiplyGrader,
    MultiplyWorkflow,
    multiply_workflow_config,
)

from osmosis_ai.rollout import LocalBackend
from osmosis_ai.rollout.server import create_rollout_server


class WorkerMultiplyWorkflow(MultiplyWorkflow):
    async def run(self, ctx: Any) -> Any:
        result = await super().run(ctx)
        (ctx.artifacts_dir / "pid.txt").write_text(str(os.getpid()))
        return result


app = create_rollout_server(
    backend=LocalBackend(
        workflow=WorkerMultiplyWorkflow,
        workflow_config=multiply_workflow_config,
        grader=MultiplyGrader,
    ),
    configure_logging=False,
)
