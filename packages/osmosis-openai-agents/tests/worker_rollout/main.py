"""The OpenAI Agents template rollout (``tests/test_rollout.py``) as a served entrypoint, for the
2-worker-process test: each worker imports this file and rebuilds the backend from ``app``. The
workflow is the template's, plus a note of the process it ran in."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from osmosis_ai.rollout import LocalBackend
from osmosis_ai.rollout.server import create_rollout_server

_NAME = "osmosis_openai_agents_template_rollout"  # as tests/test_server.py loads it
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(
        _NAME, Path(__file__).resolve().parent.parent / "test_rollout.py"
    )
    assert _spec is not None
    assert _spec.loader is not None
    sys.modules[_NAME] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules[_NAME])
TEMPLATE = sys.modules[_NAME]


class WorkerMultiplyWorkflow(TEMPLATE.MultiplyWorkflow):
    async def run(self, ctx: Any) -> Any:
        result = await super().run(ctx)
        (ctx.artifacts_dir / "pid.txt").write_text(str(os.getpid()))
        return result


app = create_rollout_server(
    backend=LocalBackend(workflow=WorkerMultiplyWorkflow, grader=TEMPLATE.MultiplyGrader),
    configure_logging=False,
)
