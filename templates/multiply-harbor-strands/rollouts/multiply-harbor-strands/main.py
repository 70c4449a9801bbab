"""Rollout server for multiply-harbor-strands: every rollout runs as one Harbor trial.

The agent workflow and grader run inside the trial's sandbox. Where the sandbox lives is chosen
by `OSMOSIS_HARBOR_ENV`:

    OSMOSIS_HARBOR_ENV=skypilot   SkyPilot sandboxes (production)
    OSMOSIS_HARBOR_ENV=docker     a local Docker daemon (development)
    OSMOSIS_HARBOR_ENV=local      a Docker-free sandbox (tests only)

Unset, importing this file fails with a message listing these choices.
"""

from pathlib import Path

from harbor.models.job.config import RetryConfig
from harbor.trial.queue import TrialQueue
from multiply_harbor_strands.config import config
from multiply_harbor_strands.grader import MultiplyGrader
from multiply_harbor_strands.workflow import MultiplyWorkflow

from osmosis_ai.rollout.backend.harbor import HarborBackend, environment_config_from_env
from osmosis_ai.rollout.server import create_rollout_server, serve

backend = HarborBackend(
    # One trial per rollout; a failed trial is a failed rollout, never retried behind our back.
    orchestrator=TrialQueue(n_concurrent=8, retry_config=RetryConfig(max_retries=0)),
    tasks_dir=Path(__file__).parent / "task",
    agent=MultiplyWorkflow,
    grader=MultiplyGrader,
    workflow_config=config,
    environment_config=environment_config_from_env(),
)
app = create_rollout_server(backend=backend)

if __name__ == "__main__":
    serve(app)
