"""Benchmark TOML validation: every G1a field read, each problem with its key path and fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from osmosis_ai.config import BenchmarkConfig, ConfigError, load_benchmark_config

FULL = """
[experiment]
benchmark = "terminal-bench-2-1"

[tasks]
task_set = "parity"

[execution]
attempts_per_task = 3
max_concurrent_attempts = 4
timeout_multiplier = 1.5
max_retries = 1
judge_model = "openai/gpt-5.2"
judge_api_key_secret = "JUDGE_KEY"

[verifier]
required = ["MY_VLM_KEY"]

[secrets]
required = ["WEATHER_API_KEY"]

[env]
LOG_LEVEL = "info"

[[agents]]
harness = "codex"

[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"

[agents.env]
AGENT_MODE = "strict"

[[agents]]
harness = "cursor-cli"
harness_api_key_secret = "CURSOR_API_KEY"
name = "cursor-local"
rollout = "calc"

[agents.model]
type = "endpoint"
base_url = "http://127.0.0.1:8000/v1"
model = "qwen"
api_key_secret = "VLLM_KEY"
"""


def _load(tmp_path: Path, text: str) -> BenchmarkConfig:
    path = tmp_path / "bench.toml"
    path.write_text(text, encoding="utf-8")
    return load_benchmark_config(path)


def test_every_field_is_read_and_the_platform_body_leaves_local_keys_out(tmp_path: Path) -> None:
    config = _load(tmp_path, FULL)
    assert config.execution.timeout_multiplier == 1.5
    assert config.required_secrets == [
        "OPENAI_API_KEY", "VLLM_KEY", "CURSOR_API_KEY", "JUDGE_KEY", "MY_VLM_KEY",
        "WEATHER_API_KEY"]  # fmt: skip
    body = config.platform_body()
    assert body["tasks_config"] == {"task_set": "parity"}
    assert body["execution_config"]["verifier_secrets"] == ["MY_VLM_KEY"]
    assert body["agents"][1] == {
        "harness": "cursor-cli",
        "harness_api_key_secret": "CURSOR_API_KEY",
        "model": {"type": "endpoint", "model": "qwen", "api_key_secret": "VLLM_KEY",
                  "base_url": "http://127.0.0.1:8000/v1"},
        "env": {},
    }  # fmt: skip
    assert [a.label(i) for i, a in enumerate(config.agents)] == [
        "codex (openai/gpt-5.2)", "cursor-local"]  # fmt: skip


@pytest.mark.parametrize(
    ("change", "key", "says"),
    [
        (('benchmark = "terminal-bench-2-1"', ""), "experiment.benchmark", "Missing"),
        (("attempts_per_task = 3", "attempts_per_task = 0"), "execution.attempts_per_task",
         "greater than or equal to 1"),
        (('task_set = "parity"', 'task_set = "parity"\nlimit = 3'), "tasks.limit", "Unrecognized"),
        (('type = "provider"', 'type = "hosted"'), "agents[0].model.base_model", "required"),
        (('api_key_secret = "OPENAI_API_KEY"', 'api_key_secret = "openai"'),
         "agents[0].model.api_key_secret", "invalid secret name"),
        (('api_key_secret = "OPENAI_API_KEY"', 'api_key_secret = "DAYTONA_API_KEY"'),
         "agents[0].model.api_key_secret", "reserved"),
        (('LOG_LEVEL = "info"', 'JUDGE_KEY = "x"'), "env.JUDGE_KEY", "injected"),
        (('harness_api_key_secret = "CURSOR_API_KEY"', ""),
         "agents[1].harness_api_key_secret", "reads CURSOR_API_KEY"),
        (('name = "cursor-local"', 'name = "codex (openai/gpt-5.2)"'), "agents[1].name",
         "distinct name"),
        (('rollout = "calc"', 'rollout = "../calc"'), "agents[1].rollout", "one folder name"),
        (('required = ["WEATHER_API_KEY"]', 'required = ["A", "A"]'), "secrets.required[1]",
         "duplicate"),
    ],
)  # fmt: skip
def test_each_problem_names_its_key_and_the_fix(
    tmp_path: Path, change: tuple[str, str], key: str, says: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, FULL.replace(*change, 1))
    issues = {i.key: i.message for i in raised.value.issues}
    assert key in issues, raised.value.render()
    assert says in issues[key]


def test_missing_agents_and_a_bad_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, '[experiment]\nbenchmark = "x"\n')
    assert [i.key for i in raised.value.issues] == ["agents"]
    assert "[[agents]]" in raised.value.issues[0].message
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, '[experiment]\nbenchmark = "x"\n[agents]\nharness = "codex"\n')
    assert "write `[[agents]]`" in raised.value.render()
    with pytest.raises(ConfigError, match="not valid TOML"):
        _load(tmp_path, "[experiment\n")
