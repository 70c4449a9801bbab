"""Module-level configuration: sampling parameters and the turn budget.

There is no model object to build: the workflow reads the policy endpoint from its context
(`ctx.policy`) on every rollout, so the same code serves training, `osmosis eval run` and tests.
"""

from osmosis_ai.rollout import AgentWorkflowConfig


class MultiplyConfig(AgentWorkflowConfig):
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 4096
    max_turns: int = 8


config = MultiplyConfig(name="multiply-local-plain")
