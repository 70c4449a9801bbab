"""Rollout server for calc.

`osmosis rollout serve rollouts/calc/main.py` serves `app` on 127.0.0.1. Importing this file
builds the backend but starts nothing, so `osmosis rollout validate` can check it.
"""

from osmosis_ai.rollout import LocalBackend
from osmosis_ai.rollout.server import create_rollout_server, serve

from calc.grader import MyGrader
from calc.workflow import MyAgentWorkflow

backend = LocalBackend(workflow=MyAgentWorkflow, grader=MyGrader)
app = create_rollout_server(backend=backend)

if __name__ == "__main__":
    serve(app)
