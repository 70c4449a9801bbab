"""Rollout server for rubric-judge-local.

`osmosis rollout serve rollouts/rubric-judge-local/main.py` (or `python main.py`) serves `app` on
127.0.0.1; `osmosis eval run` and the training platform talk to it. Importing this file builds
the backend but does not start anything, so `osmosis rollout validate` can check it.
"""

from rubric_judge_local.grader import RubricGrader
from rubric_judge_local.workflow import AnswerWorkflow

from osmosis_ai.rollout import LocalBackend
from osmosis_ai.rollout.server import create_rollout_server, serve

backend = LocalBackend(workflow=AnswerWorkflow, grader=RubricGrader)
app = create_rollout_server(backend=backend)

if __name__ == "__main__":
    serve(app)
