"""Eval/training TOML validation: every problem reported at once, each with its key path."""

from __future__ import annotations

from pathlib import Path

import pytest

from osmosis_ai.config import (
    ConfigError,
    EvalConfig,
    load_eval_config,
    load_training_config,
)

VALID_EVAL = """
[experiment]
rollout = "multiply"
entrypoint = "main.py"
model_path = "openai/gpt-5-mini"
dataset = "multiply"

[evaluation]
n = 2
pass_threshold = 0.5
agent_workflow_timeout_s = 450

[env]
MY_FLAG = "1"

[secrets]
required = ["OPENAI_API_KEY"]
"""


def _write(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _keys(exc: ConfigError) -> dict[str, str]:
    return {issue.key: issue.message for issue in exc.issues}


def test_valid_eval_config_round_trips(tmp_path: Path) -> None:
    config = load_eval_config(_write(tmp_path, VALID_EVAL))
    assert isinstance(config, EvalConfig)
    assert config.evaluation.n == 2
    assert config.evaluation.agent_workflow_timeout_s == 450.0
    assert config.evaluation.limit is None
    assert config.required_secrets == ["OPENAI_API_KEY"]
    assert config.entrypoint_path(tmp_path) == tmp_path / "rollouts" / "multiply" / "main.py"
    body = config.sections_for_platform()
    assert body["evaluation_config"] == {
        "n": 2,
        "pass_threshold": 0.5,
        "agent_workflow_timeout_s": 450.0,
    }
    assert body["env_config"] == {"MY_FLAG": "1"}


def test_every_problem_is_reported_with_its_key_path(tmp_path: Path) -> None:
    text = """
[experiment]
rollout = "a/b"
entrypoint = "../x.py"
model_path = "m"
branch = "main"
commit_sha = "abc1234"
foo = 1

[evaluation]
n = "3"
bogus = true

[env]
_OSMOSIS_X = "1"
SHARED = "v"

[secrets]
required = ["lower", "SHARED", "A", "A"]

[unknown]
x = 1
"""
    with pytest.raises(ConfigError) as info:
        load_eval_config(_write(tmp_path, text))
    keys = _keys(info.value)
    assert "single folder name" in keys["experiment.rollout"]
    assert "inside the rollout folder" in keys["experiment.entrypoint"]
    assert keys["experiment.dataset"] == "Missing 'dataset' in [experiment] section"
    assert keys["experiment.foo"] == "Unrecognized key"
    assert "not both" in keys["experiment"]
    assert keys["evaluation.n"] == "must be an integer, got '3'"
    assert keys["evaluation.bogus"] == "Unrecognized key"
    assert "reserved" in keys["env._OSMOSIS_X"]
    assert "invalid secret name 'lower'" in keys["secrets.required[0]"]
    assert "also set in [env]" in keys["secrets.required[1]"]
    assert "duplicate" in keys["secrets.required[3]"]
    assert keys["unknown"].startswith("Unrecognized section")
    rendered = str(info.value)
    assert rendered.startswith("Invalid eval config")
    assert "  - experiment.foo: Unrecognized key" in rendered


def test_eval_requires_secrets_section(tmp_path: Path) -> None:
    text = VALID_EVAL.split("[secrets]")[0]
    with pytest.raises(ConfigError) as info:
        load_eval_config(_write(tmp_path, text))
    assert _keys(info.value)["secrets"].startswith("Missing [secrets] section")
    assert len(info.value.issues) == 1


def test_non_finite_and_out_of_range_numbers_are_rejected(tmp_path: Path) -> None:
    text = VALID_EVAL.replace("n = 2", "n = 0\npass_threshold_x = 1").replace(
        "pass_threshold = 0.5", "pass_threshold = nan"
    )
    with pytest.raises(ConfigError) as info:
        load_eval_config(_write(tmp_path, text))
    keys = _keys(info.value)
    assert "greater than or equal to 1" in keys["evaluation.n"]
    assert keys["evaluation.pass_threshold"] == "must be a finite number"


def test_missing_file_and_bad_toml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_eval_config(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_eval_config(_write(tmp_path, "[experiment\n"))


def test_training_config_sections(tmp_path: Path) -> None:
    text = """
[experiment]
rollout = "multiply"
entrypoint = "main.py"
model_path = "Qwen/Qwen3.6-35B-A3B"
dataset = "multiply"

[training]
lr = 1e-5
n_samples_per_prompt = 8

[sampling]
rollout_temperature = 1.0

[checkpoints]
checkpoint_save_freq = 20
"""
    config = load_training_config(_write(tmp_path, text))
    assert config.training.lr == 1e-5
    assert config.required_secrets == []
    body = config.sections_for_platform()
    assert body["training_config"] == {"lr": 1e-5, "n_samples_per_prompt": 8}
    # [evaluation] belongs to eval configs only.
    with pytest.raises(ConfigError) as info:
        load_training_config(_write(tmp_path, text + "\n[evaluation]\nn = 1\n", "t2.toml"))
    assert _keys(info.value)["evaluation"].startswith("Unrecognized section")


ENV_EVAL = """
[experiment]
env = "reasoning-gym:leg_counting?size=5&seed=2"
model_path = "mock"

[secrets]
required = []
"""


def test_an_environment_spec_stands_for_rollout_entrypoint_and_dataset(tmp_path: Path) -> None:
    config = load_eval_config(_write(tmp_path, ENV_EVAL))
    assert config.experiment.env == "reasoning-gym:leg_counting?size=5&seed=2"
    assert config.rollout == "reasoning-gym-leg_counting"
    assert config.entrypoint == "main.py"
    assert config.experiment.dataset == "reasoning-gym:leg_counting?seed=2&size=5"
    # eval submit carries it in the experiment section
    assert config.sections_for_platform()["experiment_config"]["env"] == config.experiment.env


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('"leg_counting"', "has no source"),
        ('"nowhere:thing"', "Unknown environment source 'nowhere'"),
        ("3", "must be a string"),
    ],
)
def test_a_bad_environment_spec_is_reported_at_its_key(
    tmp_path: Path, value: str, message: str
) -> None:
    text = ENV_EVAL.replace('"reasoning-gym:leg_counting?size=5&seed=2"', value)
    with pytest.raises(ConfigError) as caught:
        load_eval_config(_write(tmp_path, text))
    assert message in _keys(caught.value)["experiment.env"]
