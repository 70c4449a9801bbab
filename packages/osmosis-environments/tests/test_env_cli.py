"""``osmosis env list`` / ``osmosis env info`` against the installed adapters and frameworks."""

from __future__ import annotations

import json
from typing import Any

import pytest


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    from osmosis_cli.main import run

    capsys.readouterr()
    code = run(["--json", *args])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else None, captured.err


def test_env_list_enumerates_reasoning_gym_generators(capsys: pytest.CaptureFixture[str]) -> None:
    from reasoning_gym.factory import DATASETS

    code, envelope, _ = cli_json(capsys, "env", "list", "reasoning-gym")
    assert code == 0
    specs = {item["spec"] for item in envelope["items"]}
    assert specs == {f"reasoning-gym:{name}" for name in DATASETS}
    assert envelope["total_count"] == len(DATASETS)


def test_env_info_loads_the_environment(capsys: pytest.CaptureFixture[str]) -> None:
    code, envelope, _ = cli_json(capsys, "env", "info", "reasoning-gym:leg_counting?size=4&seed=2")
    assert code == 0
    assert envelope["data"] == {
        "spec": "reasoning-gym:leg_counting?seed=2&size=4",
        "description": "Generates leg counting arithmetic tasks",
        "rows": 4,
        "metrics": ["score", "answered"],
        "needs": [],
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("env", "info", "leg_counting"), "has no source"),
        (("env", "info", "nowhere:thing"), "Unknown environment source 'nowhere'"),
        (("env", "info", "reasoning-gym:leg_counting?size=x"), "is not a valid int"),
        (("env", "list", "nowhere"), "Unknown environment source 'nowhere'"),
    ],
)
def test_bad_input_is_a_validation_error(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    code, _, err = cli_json(capsys, *args)
    assert code == 1
    error = json.loads(err)["error"]
    assert error["code"] == "VALIDATION"
    assert message in error["message"]


def test_eval_run_without_config_or_env_says_what_to_pass(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = cli_json(capsys, "eval", "run", "--model", "mock")
    assert code == 1
    assert "--env SOURCE:NAME" in json.loads(err)["error"]["message"]
