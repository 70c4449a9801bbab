"""Reasoning Gym generators through ``osmosis eval run --env`` against the real package: the
rewards equal what the generator's own ``score_answer`` gives the same replies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import reasoning_gym
from environments_harness import EvalEnv
from reasoning_gym.utils import extract_answer

from osmosis_ai.rollout.integrations.environments import (
    EnvironmentSpecError,
    environment_source,
    load_environment,
)

# (generator, its config options, a wrong answer)
GENERATORS = [
    ("leg_counting", {"min_animals": 2, "max_animals": 3}, "-1"),
    ("basic_arithmetic", {"min_terms": 2, "max_terms": 3}, "not a number"),
    ("spell_backward", {}, "zzz"),
]


@pytest.mark.parametrize(("name", "config", "wrong"), GENERATORS)
def test_a_generator_runs_through_eval_run_and_scores_like_reasoning_gym(
    eval_env: EvalEnv, name: str, config: dict[str, int], wrong: str
) -> None:
    dataset = reasoning_gym.create_dataset(name, size=3, seed=7, **config)
    entries = [dataset[i] for i in range(3)]
    replies = [
        f"Thinking... <answer>{entries[0]['answer']}</answer>",  # right
        f"<answer>{wrong}</answer>",  # wrong
        f"The answer is {entries[2]['answer']}",  # right text, but no <answer> tag
    ]
    query = "&".join(f"{k}={v}" for k, v in {"size": 3, "seed": 7, **config}.items())
    result = eval_env(f"reasoning-gym:{name}?{query}", [[r] for r in replies])
    assert result.envelope["status"] in ("success", "partial")
    assert [row["status"] for row in result.rows] == ["success"] * 3
    expected = [
        float(dataset.score_answer(extract_answer(r), e))
        for r, e in zip(replies, entries, strict=True)
    ]
    assert [row["reward"] for row in result.rows] == expected
    assert expected[0] == 1.0
    assert expected[2] == 0.0
    assert [row["label"] for row in result.rows] == [str(e["answer"]) for e in entries]
    for row, reply in zip(result.rows, replies, strict=True):
        assert row["metrics"] == {
            "score": row["reward"],
            "answered": float(extract_answer(reply) is not None),
        }
    metrics = result.summary["grader_metrics"]
    assert set(metrics) == {"score", "answered"}
    assert metrics["score"]["n"] == 3
    assert metrics["score"]["mean"] == pytest.approx(sum(expected) / 3)
    assert metrics["answered"]["mean"] == pytest.approx(2 / 3)
    assert (result.run_dir / "report.html").is_file()


def test_options_are_typed_by_the_generator_config() -> None:
    env = load_environment("reasoning-gym:leg_counting?size=4&seed=3&max_animals=3")
    assert len(env.rows) == 4
    assert env.metrics == ("score", "answered")
    expected = reasoning_gym.create_dataset("leg_counting", size=4, seed=3, max_animals=3)
    assert [row["ground_truth"] for row in env.rows] == [expected[i]["answer"] for i in range(4)]
    assert env.rows[0]["user_prompt"] == expected[0]["question"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("reasoning-gym:no_such_generator", "has no generator 'no_such_generator'"),
        ("reasoning-gym:leg_counting?sise=3", "has no option 'sise'; its options are"),
        ("reasoning-gym:leg_counting?size=three", "size='three' is not a valid int"),
        ("reasoning-gym:leg_counting?system_prompt=nope", "is not one of Reasoning Gym's"),
        ("reasoning-gym:leg_counting?min_animals=9&max_animals=2", "LegCountingConfig rejects it"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(EnvironmentSpecError, match=message.replace("(", r"\(")):
        load_environment(spec)


def test_list_enumerates_every_registered_generator() -> None:
    from reasoning_gym.factory import DATASETS

    listed = {info.spec: info for info in environment_source("reasoning-gym").list()}
    assert set(listed) == {f"reasoning-gym:{name}" for name in DATASETS}
    assert listed["reasoning-gym:leg_counting"].rows == 500
    assert listed["reasoning-gym:leg_counting"].metrics == ("score", "answered")


async def test_one_rollout_in_process_is_scored_by_the_generator() -> None:
    from osmosis_ai.rollout.integrations.spi import aclose_policy_clients
    from osmosis_ai.testing import ScriptedPolicyServer, run_environment_row, text_reply

    env = load_environment("reasoning-gym:basic_arithmetic?size=2&seed=5")
    row = env.rows[1]
    prompt = [
        {"role": "system", "content": row["system_prompt"]},
        {"role": "user", "content": row["user_prompt"]},
    ]
    reply = f"<answer>{row['ground_truth']}</answer>"
    async with ScriptedPolicyServer([text_reply(reply)]) as policy:
        result = await run_environment_row(env, 1, policy=policy)
        sent = policy.requests_for(result.rollout_id)[0].messages
    await aclose_policy_clients()
    assert result.status == "success", result.err_message
    dataset = reasoning_gym.create_dataset("basic_arithmetic", size=2, seed=5)
    assert result.reward == dataset.score_answer(extract_answer(reply), dataset[1]) == 1.0
    assert result.sample is not None
    assert result.sample.metrics == {"score": 1.0, "answered": 1.0}
    assert [m["content"] for m in sent] == [p["content"] for p in prompt]


def test_an_eval_config_names_the_environment_under_experiment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from osmosis_ai.eval import run_eval

    workspace = tmp_path / "ws"
    (workspace / "configs" / "eval").mkdir(parents=True)
    config = workspace / "configs" / "eval" / "legs.toml"
    config.write_text(
        '[experiment]\nenv = "reasoning-gym:leg_counting?size=2&seed=4"\nmodel_path = "mock"\n\n'
        "[evaluation]\nn = 2\n\n[secrets]\nrequired = []\n"
    )
    dataset = reasoning_gym.create_dataset("leg_counting", size=2, seed=4)
    script = workspace / "replies.jsonl"
    script.write_text(
        "".join(
            json.dumps({"row": i, "replies": [f"<answer>{dataset[i]['answer']}</answer>"]}) + "\n"
            for i in range(2)
        )
    )
    monkeypatch.chdir(workspace)
    run = run_eval(config, mock_script=script, workers=1)
    assert run.status == "success"
    assert run.total_work_items == 4  # 2 rows x n=2 from the config
    assert run.metrics["grader_metrics"]["score"]["mean"] == 1.0
    manifest = json.loads((run.run_dir / "manifest.json").read_text())
    assert (
        manifest["inputs"]["rollout"]["environment"] == "reasoning-gym:leg_counting?seed=4&size=2"
    )
    assert run.run_name.startswith("legs-")
