from __future__ import annotations

import stat
from pathlib import Path

import pytest

from osmosis_ai.eval._impl.proxy.upstream import UpstreamError, resolve_upstream
from osmosis_ai.eval._impl.run_dir.log import Redactor, RunLog


def test_provider_shorthand() -> None:
    up = resolve_upstream("openai/gpt-4.1-mini", environ={"OPENAI_API_KEY": "sk-test-123"})
    assert (up.model, up.base_url, up.api_key) == (
        "gpt-4.1-mini",
        "https://api.openai.com/v1",
        "sk-test-123",
    )
    assert "sk-test" not in repr(up)
    assert up.locked_identity() == {
        "model": "gpt-4.1-mini",
        "base_url": "https://api.openai.com/v1",
    }


def test_base_url_keeps_model_verbatim_and_key_optional() -> None:
    up = resolve_upstream(
        "Qwen/Qwen3-8B", base_url="http://127.0.0.1:8000/v1/chat/completions", environ={}
    )
    assert (up.model, up.base_url, up.api_key) == (
        "Qwen/Qwen3-8B",
        "http://127.0.0.1:8000/v1",
        None,
    )
    up = resolve_upstream(
        "m", base_url="http://h/v1", api_key_env="MY_KEY", environ={"MY_KEY": "k"}
    )
    assert up.api_key == "k"


@pytest.mark.parametrize(
    ("model", "kwargs", "message"),
    [
        ("gpt-4", {}, "cannot tell where to send"),
        ("openai/gpt-4", {}, "OPENAI_API_KEY is not set"),
        ("m", {"base_url": "ftp://x"}, "must start with http"),
        ("m", {"base_url": "http://x", "api_key_env": "NOPE"}, "NOPE is not set"),
        ("  ", {}, "no model given"),
    ],
)
def test_upstream_errors(model: str, kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(UpstreamError, match=message):
        resolve_upstream(model, environ={}, **kwargs)


def test_mock_and_keyless_local_provider() -> None:
    assert resolve_upstream("mock", environ={}).is_mock
    assert resolve_upstream("ollama/llama3", environ={}).api_key is None


def test_log_redacts_longest_first_and_is_private(tmp_path: Path) -> None:
    redactor = Redactor()
    redactor.add("secret")
    redactor.add("secret-long-value")
    redactor.add("ab")  # below the one threshold (4): masking it would rewrite ordinary text
    redactor.add("wxyz")  # at the threshold: masked
    log = RunLog(tmp_path / "logs.txt", redactor)
    log.info("step", "using secret-long-value and secret", key="secret", word="ab", four="wxyz")
    log.close()
    text = (tmp_path / "logs.txt").read_text()
    assert "secret" not in text
    assert "***" in text
    assert '"word":"ab"' in text
    assert '"four":"***"' in text
    assert "INFO [step]" in text
    assert stat.S_IMODE((tmp_path / "logs.txt").stat().st_mode) == 0o600


def test_policy_and_judge_resolve_providers_from_one_table() -> None:
    from osmosis_ai.eval._impl.proxy.upstream import resolve_upstream
    from osmosis_ai.eval.judge.providers import resolve_target

    env = {"FIREWORKS_API_KEY": "k1", "OPENAI_API_KEY": "k2"}
    for model in ("fireworks_ai/llama-v3", "openai/gpt-4.1-mini", "vllm/Qwen/Qwen3-8B"):
        upstream = resolve_upstream(model, environ=env)
        target = resolve_target(model, environ=env)
        assert upstream.base_url == target.base_url
        assert upstream.model == target.model
