"""0.3's ``evaluate_rubric`` against the scripted judge over real HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json

import pytest

from osmosis_ai.errors import ConfigurationError, JudgeError
from osmosis_ai.rollout import Grader, GraderContext, RolloutSample
from osmosis_ai.testing import ScriptedPolicyServer, error_reply
from osmosis_ai.testing.judge import judge_verdict, malformed_verdict, scripted_judge

RUBRIC = "Award 1 if the answer is 42, else 0."


def test_top_level_lazy_names_are_the_rubric_api() -> None:
    import osmosis_ai
    from osmosis_ai.eval.rubric import (
        MissingAPIKeyError,
        ModelNotFoundError,
        ProviderRequestError,
        RubricResult,
        evaluate_rubric,
    )
    from osmosis_ai.eval.rubric import types as rubric_types

    assert osmosis_ai.evaluate_rubric is evaluate_rubric
    assert osmosis_ai.RubricResult is RubricResult is rubric_types.RubricResult
    assert osmosis_ai.MissingAPIKeyError is MissingAPIKeyError
    assert osmosis_ai.ModelNotFoundError is ModelNotFoundError
    assert osmosis_ai.ProviderRequestError is ProviderRequestError
    assert asyncio.iscoroutinefunction(evaluate_rubric)  # 0.3: an async function
    for cls in (MissingAPIKeyError, ModelNotFoundError, ProviderRequestError):
        assert issubclass(cls, JudgeError)
        assert issubclass(cls, RuntimeError)  # 0.3's base
    assert issubclass(ModelNotFoundError, ProviderRequestError)
    assert RubricResult(score=0.8, explanation="good") == RubricResult(0.8, "good")


def test_sync_caller_in_03_style_gets_a_clamped_score() -> None:
    from osmosis_ai import evaluate_rubric
    from osmosis_ai.eval.rubric import evaluate_rubric_sync

    with ScriptedPolicyServer(scripted_judge(lambda answer: 7.0 if "42" in answer else -3.0)) as s:
        # 0.3 code from a script: asyncio.run(evaluate_rubric(...))
        high = asyncio.run(
            evaluate_rubric(
                solution_str="It is 42.",
                rubric=RUBRIC,
                model="openai/gpt-4o-mini",
                base_url=s.url,
                score_min=0.0,
                score_max=5.0,
            )
        )
        low = evaluate_rubric_sync(
            solution_str="It is 41.", rubric=RUBRIC, model="openai/gpt-4o-mini", base_url=s.url
        )
        first = s.requests[0].body
    assert (high.score, high.raw_score) == (5.0, 7.0)
    assert (low.score, low.raw_score) == (0.0, -3.0)
    assert high.explanation == "scripted verdict"
    assert first["model"] == "gpt-4o-mini"
    assert first["response_format"]["type"] == "json_schema"
    assert first["temperature"] == 0.0
    user = first["messages"][1]["content"]
    assert "<<<BEGIN_CANDIDATE_OUTPUT>>>\nIt is 42.\n<<<END_CANDIDATE_OUTPUT>>>" in user
    assert "0 to 5" in user


def test_sync_form_refuses_to_block_a_running_loop() -> None:
    from osmosis_ai.eval.rubric import evaluate_rubric_sync

    async def inside() -> None:
        evaluate_rubric_sync(
            solution_str="x", rubric="r", model="openai/m", base_url="http://127.0.0.1:9/v1"
        )

    with pytest.raises(ConfigurationError, match="await evaluate_rubric"):
        asyncio.run(inside())


class JudgeGrader(Grader):
    """0.3-style grader: awaits evaluate_rubric inside grade()."""

    base_url = ""

    async def grade(self, ctx: GraderContext) -> None:
        from osmosis_ai.eval.rubric import evaluate_rubric

        assert ctx.sample is not None
        answer = str(ctx.sample.messages[-1]["content"])
        result = await evaluate_rubric(
            solution_str=answer,
            rubric=RUBRIC,
            model="anthropic/claude-sonnet-4-5",
            ground_truth=ctx.label,
            original_input="What is 6 * 7?",
            metadata=ctx.metadata,
            base_url=self.base_url,
        )
        ctx.set_reward(result.score)


async def test_async_call_inside_grader_grade() -> None:
    async with ScriptedPolicyServer(scripted_judge(lambda a: 1.0 if "42" in a else 0.0)) as s:
        JudgeGrader.base_url = s.url
        sample = RolloutSample(messages=[{"role": "assistant", "content": "#### 42"}])
        ctx = GraderContext(label="42", sample=sample, metadata={"topic": "math"})
        await JudgeGrader().grade(ctx)
        user = s.requests[0].messages[1]["content"]
    assert sample.reward == 1.0
    assert "<<<BEGIN_GROUND_TRUTH>>>\n42\n<<<END_GROUND_TRUTH>>>" in user
    assert "What is 6 * 7?" in user
    assert '"topic": "math"' in user


async def test_missing_api_key_in_env_and_argument() -> None:
    from osmosis_ai import MissingAPIKeyError, evaluate_rubric

    with pytest.raises(MissingAPIKeyError, match="OPENAI_API_KEY"):
        await evaluate_rubric(solution_str="x", rubric=RUBRIC, model="openai/gpt-4o")
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
        await evaluate_rubric(solution_str="x", rubric=RUBRIC, model="claude-sonnet-4-5")


async def test_api_key_from_argument_and_env_reaches_the_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from osmosis_ai import evaluate_rubric

    async with ScriptedPolicyServer([judge_verdict(1.0), judge_verdict(1.0)]) as s:
        monkeypatch.setenv("GROQ_BASE_URL", s.url)  # the provider's base-URL variable
        monkeypatch.setenv("GROQ_API_KEY", "env-key-123")
        await evaluate_rubric(solution_str="x", rubric=RUBRIC, model="groq/llama-3.3-70b")
        await evaluate_rubric(
            solution_str="x", rubric=RUBRIC, model="groq/llama-3.3-70b", api_key="arg-key-456"
        )
        tokens = [r.bearer_token for r in s.requests]
        models = {r.body["model"] for r in s.requests}
    assert tokens == ["env-key-123", "arg-key-456"]
    assert models == {"llama-3.3-70b"}


async def test_model_not_found_on_404_is_not_retried() -> None:
    from osmosis_ai import ModelNotFoundError, evaluate_rubric

    async with ScriptedPolicyServer([error_reply(404, "The model `nope` does not exist")]) as s:
        with pytest.raises(ModelNotFoundError, match="nope") as caught:
            await evaluate_rubric(
                solution_str="x", rubric=RUBRIC, model="openai/nope", base_url=s.url
            )
        assert len(s.requests) == 1
    assert caught.value.status_code == 404
    assert (caught.value.provider, caught.value.model) == ("openai", "nope")


async def test_5xx_after_retries_raises_provider_request_error() -> None:
    from osmosis_ai import ProviderRequestError, evaluate_rubric

    # Retry-After: 0 is honoured, so the retries do not wait.
    overloaded = error_reply(503, "overloaded", headers={"Retry-After": "0"})
    async with ScriptedPolicyServer([overloaded] * 5) as s:
        with pytest.raises(ProviderRequestError, match="HTTP 503") as caught:
            await evaluate_rubric(solution_str="x", rubric=RUBRIC, model="openai/m", base_url=s.url)
        assert len(s.requests) == 5  # the first attempt and 4 retries
    assert caught.value.status_code == 503
    assert caught.value.attempts == 5


async def test_429_and_malformed_replies_are_retried_then_succeed() -> None:
    from osmosis_ai import evaluate_rubric

    script = [
        error_reply(429, "slow down", headers={"Retry-After": "0"}),
        malformed_verdict("I would say it is decent."),
        judge_verdict(0.25, "partly right"),
    ]
    async with ScriptedPolicyServer(script) as s:
        result = await evaluate_rubric(
            solution_str="x", rubric=RUBRIC, model="openai/m", base_url=s.url
        )
        assert len(s.requests) == 3
    assert (result.score, result.explanation) == (0.25, "partly right")
    assert result.call is not None
    assert result.call.attempts == 3


async def test_unstructured_model_is_asked_with_less_structure_and_parsed_tolerantly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """json_schema refused -> json_object; that refused too -> a prompt-only JSON answer. The
    endpoint's choice is remembered: the next call asks in text at once, and it is said once."""
    from osmosis_ai import evaluate_rubric

    prose = '<think>hmm</think>Sure! ```json\n{"score": 0.9, "explanation": "close"}\n```'
    script = [
        error_reply(400, "response_format json_schema is not supported"),
        error_reply(422, "response_format json_object is not supported"),
        prose,
        prose,
    ]
    async with ScriptedPolicyServer(script) as s:
        for _ in range(2):
            result = await evaluate_rubric(
                solution_str="x", rubric=RUBRIC, model="vllm/Qwen/Qwen3-8B", base_url=s.url
            )
            assert (result.score, result.explanation) == (0.9, "close")
        bodies = [r.body for r in s.requests]
    modes = [b.get("response_format", {}).get("type") for b in bodies]
    assert modes == ["json_schema", "json_object", None, None]
    assert bodies[2]["model"] == "Qwen/Qwen3-8B"
    said = [r.getMessage() for r in caplog.records if r.name == "osmosis_ai.eval.judge"]
    assert len(said) == 2  # one line per fallback, not one per call
    assert "asking with 'json_object' from now on" in said[0]
    assert "asking with 'text' from now on" in said[1]


async def test_bad_arguments_are_clear_errors() -> None:
    from osmosis_ai import evaluate_rubric

    with pytest.raises(ConfigurationError, match="score_max"):
        await evaluate_rubric(
            solution_str="x", rubric=RUBRIC, model="openai/m", score_min=1, score_max=1, api_key="k"
        )
    with pytest.raises(TypeError, match="solution_str"):
        await evaluate_rubric(solution_str="  ", rubric=RUBRIC, model="openai/m", api_key="k")
    with pytest.raises(ConfigurationError, match="provider"):
        await evaluate_rubric(solution_str="x", rubric=RUBRIC, model="mystery-model")
    with pytest.raises(ConfigurationError, match="http"):
        await evaluate_rubric(solution_str="x", rubric=RUBRIC, model="m", base_url="localhost:8000")


def test_verdict_json_is_what_the_scripted_judge_sends() -> None:
    reply = judge_verdict(0.5, "ok")
    assert json.loads(reply.content or "") == {"score": 0.5, "explanation": "ok"}


async def test_a_5xx_naming_response_format_degrades_but_a_plain_5xx_is_retried() -> None:
    """llama.cpp's server answers a json_schema request with HTTP 500 and a validation error
    about response_format: that is a refusal, not an outage."""
    from osmosis_ai import evaluate_rubric

    refusal = error_reply(
        500, "1 validation error: ('body', 'response_format', 'type') Input should be 'text'"
    )
    outage = error_reply(503, "overloaded", headers={"Retry-After": "0"})
    async with ScriptedPolicyServer([refusal, outage, judge_verdict(1.0, "ok")]) as s:
        result = await evaluate_rubric(
            solution_str="x", rubric=RUBRIC, model="openai/m", base_url=s.url
        )
        modes = [r.body.get("response_format", {}).get("type") for r in s.requests]
    assert result.score == 1.0
    assert modes == ["json_schema", "json_object", "json_object"]  # the 503 was retried as is
