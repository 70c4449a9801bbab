"""The request resolved and validated into an ``EvalPlan`` before anything starts."""
