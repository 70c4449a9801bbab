"""Rollout server for multiply-local-adk.

`osmosis rollout serve rollouts/multiply-local-adk/main.py` (or `python main.py`) serves
`app` on 127.0.0.1; `osmosis eval run` and the training platform talk to it. Importing this
file builds the backend but does not start anything, so `osmosis rollout validate` can check it.
"""

from multiply_local_adk.config import config
from multiply_local_adk.grader import MultiplyGrader
from multiply_local_adk.workflow import MultiplyWorkflow

from osmosis_ai.rollout import LocalBackend
from osmosis_ai.rollout.server import create_rollout_server, serve

backend = LocalBackend(workflow=MultiplyWorkflow, workflow_config=config, grader=MultiplyGrader)
app = create_rollout_server(backend=backend)

if __name__ == "__main__":
    serve(app)
