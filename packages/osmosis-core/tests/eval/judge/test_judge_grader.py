"""A grader using the judge, run through LocalBackend: judge failures are ``judge_error``, never 0."""

from __future__ import annotations

import pytest

from osmosis_ai.errors import JudgeError
from osmosis_ai.eval.judge import Judge, ModelNotFoundError, ProviderRequestError
from osmosis_ai.rollout import (
    AgentWorkflow,
    AgentWorkflowContext,
    Grader,
    GraderConfig,
    GraderContext,
    RolloutErrorCategory,
)
from osmosis_ai.rollout.errors import categorize_exception
from osmosis_ai.testing import ScriptedPolicyServer, error_reply, run_rollout
from osmosis_ai.testing.judge import scripted_judge


class Answer(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext) -> list[dict[str, str]]:
        return [*ctx.prompt, {"role": "assistant", "content": "The answer is 42."}]


class JudgeConfig(GraderConfig):
    judge_url: str


class RubricGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        assert isinstance(self.config, JudgeConfig)
        assert ctx.sample is not None
        judge = Judge("openai/judge-model", base_url=self.config.judge_url, retry_base_delay=0.01)
        result = await judge.score(
            solution_str=str(ctx.sample.messages[-1]["content"]),
            rubric="1 if the answer is 42",
            ground_truth=ctx.label,
        )
        ctx.set_reward(result.score)


def test_judge_errors_categorize_as_judge_error() -> None:
    assert RolloutErrorCategory.JUDGE_ERROR == "judge_error"
    for exc in (
        ProviderRequestError("openai", "m", "HTTP 503"),
        ModelNotFoundError("openai", "m", "HTTP 404"),
        JudgeError("anything"),
    ):
        assert categorize_exception(exc) is RolloutErrorCategory.JUDGE_ERROR


async def test_graded_rollout_reports_judge_usage_apart_from_the_policy() -> None:
    async with (
        ScriptedPolicyServer("instant") as policy,
        ScriptedPolicyServer(scripted_judge(lambda a: 1.0 if "42" in a else 0.0)) as judge,
    ):
        config = JudgeConfig(name="judge", judge_url=judge.url)
        result = await run_rollout(
            Answer, RubricGrader, prompt="6 * 7?", label="42", policy=policy, grader_config=config
        )
    assert result.status == "success"
    assert result.reward == 1.0
    assert result.sample is not None
    metrics = result.sample.metrics
    assert metrics["judge_calls"] == 1
    assert metrics["judge_failed_calls"] == 0
    assert metrics["judge_prompt_tokens"] > 0
    assert metrics["judge_completion_tokens"] > 0


@pytest.mark.parametrize(
    "failure", [error_reply(503, headers={"Retry-After": "0"}), error_reply(404)]
)
async def test_failing_judge_makes_a_judge_error_not_reward_zero(failure: object) -> None:
    async with (
        ScriptedPolicyServer("instant") as policy,
        ScriptedPolicyServer(scripted_judge(lambda a: failure)) as judge,  # type: ignore[arg-type, return-value]
    ):
        config = JudgeConfig(name="judge", judge_url=judge.url)
        result = await run_rollout(
            Answer, RubricGrader, prompt="6 * 7?", label="42", policy=policy, grader_config=config
        )
    assert result.status == "failure"
    assert result.err_category == RolloutErrorCategory.JUDGE_ERROR
    assert result.reward is None
    assert result.sample is not None
    assert result.sample.reward is None
    assert result.sample.metrics["judge_failed_calls"] == 1
