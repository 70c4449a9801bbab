"""Reward = an LLM judge's score of the answer against RUBRIC (0 to 1).

The judge is `osmosis_ai.eval.judge.Judge`: concurrent calls share one client and a bounded
number of connections, failed calls are retried (honouring Retry-After), and a judge that still
fails makes the rollout a `judge_error` -- never reward 0. Its tokens and cost are reported on the
sample's metrics (`judge_*`), apart from the policy's.

Settings (environment): OSMOSIS_JUDGE_MODEL (provider/model, default openai/gpt-5-mini),
OSMOSIS_JUDGE_BASE_URL (any OpenAI-compatible endpoint; offline, the scripted judge), and the
provider's key variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...). OSMOSIS_JUDGE_CACHE=<folder>
caches verdicts so that re-grading the same answers costs nothing.
"""

import functools
import os

from osmosis_ai.eval.judge import Judge
from osmosis_ai.rollout import Grader, GraderContext

RUBRIC = """\
Score 1 if the answer names the reference answer as the capital, 0 if it names another place
or none. Spelling variants and extra context are fine; hedging between several cities is 0."""


@functools.cache
def judge() -> Judge:
    """One judge per process (built on first use, so a missing key fails the grade, not import)."""
    return Judge(
        os.environ.get("OSMOSIS_JUDGE_MODEL", "openai/gpt-5-mini"),
        base_url=os.environ.get("OSMOSIS_JUDGE_BASE_URL") or None,
        score_min=0.0,
        score_max=1.0,
    )


def last_answer(messages: list[dict]) -> str:
    for message in reversed(messages):
        if message.get("role") == "assistant" and isinstance(message.get("content"), str):
            return message["content"]
    return ""


def question(messages: list[dict]) -> str:
    return next((m["content"] for m in messages if m.get("role") == "user"), "")


class RubricGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        if ctx.sample is None:  # the workflow produced nothing to grade
            return
        messages = list(ctx.sample.messages)
        answer = last_answer(messages)
        if not answer.strip():
            ctx.set_reward(0.0)  # an empty answer is the agent's failure, not the judge's
            return
        verdict = await judge().score(
            solution_str=answer,
            rubric=RUBRIC,
            ground_truth=ctx.label,
            original_input=question(messages),
        )
        ctx.set_reward(verdict.score)
