"""The tolerant reply parser, Retry-After parsing and the provider table."""

from __future__ import annotations

import pytest

from osmosis_ai.errors import ConfigurationError
from osmosis_ai.eval.judge.parse import MalformedReplyError, parse_reply
from osmosis_ai.eval.judge.providers import (
    KEYLESS_PLACEHOLDER,
    PROVIDERS,
    pricing_provider,
    resolve_target,
)
from osmosis_ai.eval.judge.retry import retry_after


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"score": 0.5, "explanation": "ok"}', (0.5, "ok")),
        ('```json\n{"score": 3, "explanation": "fine"}\n```', (3.0, "fine")),
        ('<think>{"score": 9}</think>{"score": 1, "explanation": "x"}', (1.0, "x")),
        ('Verdict: {"score": "0.7"} done', (0.7, "")),
        ('{"note": 1} then {"score": 2, "explanation": "second"}', (2.0, "second")),
    ],
)
def test_parse_reply_accepts_common_shapes(text: str, expected: tuple[float, str]) -> None:
    assert parse_reply(text) == expected


def test_parse_reply_falls_back_to_a_score_phrase() -> None:
    score, explanation = parse_reply("The answer is right.\nScore: 0.8")
    assert score == 0.8
    assert "answer is right" in explanation


@pytest.mark.parametrize(
    "text", ["", "no number here", '{"score": true}', '{"score": "high"}', "score: nan"]
)
def test_parse_reply_rejects_replies_without_a_score(text: str) -> None:
    with pytest.raises(MalformedReplyError):
        parse_reply(text)


def test_retry_after_forms() -> None:
    assert retry_after({"Retry-After": "2"}) == 2.0
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert retry_after({"Retry-After": "9999"}) == 60.0
    assert retry_after({}) is None
    assert retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0


def test_provider_table_and_base_url_precedence() -> None:
    env = {"OPENAI_API_KEY": "k1", "OPENAI_BASE_URL": "https://proxy.example/v1/"}
    target = resolve_target("openai/gpt-4o", environ=env)
    assert (target.base_url, target.model, target.api_key) == (
        "https://proxy.example/v1",
        "gpt-4o",
        "k1",
    )
    explicit = resolve_target(
        "openai/gpt-4o", base_url="http://127.0.0.1:1/v1/chat/completions", environ=env
    )
    assert explicit.base_url == "http://127.0.0.1:1/v1"
    assert resolve_target("gpt-4o", environ=env).provider == "openai"  # inferred, as in 0.3
    assert (
        resolve_target("google/gemini-2.5-flash", environ={"GEMINI_API_KEY": "g"}).provider
        == "gemini"
    )
    local = resolve_target("ollama/llama3.2", environ={})
    assert (local.base_url, local.api_key) == ("http://127.0.0.1:11434/v1", KEYLESS_PLACEHOLDER)
    served = resolve_target("Qwen/Qwen3-8B", base_url="http://127.0.0.1:8000/v1", environ={})
    assert (served.provider, served.model) == ("custom", "Qwen/Qwen3-8B")
    for name in (
        "openai",
        "anthropic",
        "gemini",
        "openrouter",
        "together",
        "groq",
        "vllm",
        "sglang",
        "ollama",
    ):
        assert name in PROVIDERS
    with pytest.raises(ConfigurationError, match="provider"):
        resolve_target("unknown/model", environ={})


def test_a_judge_is_priced_as_its_provider_only_at_that_provider_s_endpoint() -> None:
    env = {"OPENAI_API_KEY": "k"}
    assert pricing_provider(resolve_target("openai/gpt-4o", environ=env)) == "openai"
    assert pricing_provider(resolve_target("gpt-4o", environ=env)) == "openai"
    # the same shorthand sent elsewhere: priced by that URL (a local server has no price)
    local = resolve_target("openai/gpt-4o", base_url="http://127.0.0.1:8124/v1", environ=env)
    assert pricing_provider(local) is None
    moved = {**env, "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}
    assert pricing_provider(resolve_target("openai/gpt-4o", environ=moved)) is None
    served = resolve_target("Qwen/Qwen3-8B", base_url="http://127.0.0.1:8000/v1", environ={})
    assert pricing_provider(served) is None
