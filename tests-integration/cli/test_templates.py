"""The shipped templates, end to end with the real frameworks and our integrations.

Each template is applied into a fresh git repository, checked with ``osmosis rollout
validate`` (which imports its ``main.py`` in a child process), and its workflow and grader are run
on the first dataset row against the scripted multiply policy of ``osmosis_ai.testing``: the
agent must call the ``multiply`` tool and the grader must give reward 1.0.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("osmosis_ai.testing")


def _osmosis(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "osmosis_cli", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OSMOSIS_HOME", str(tmp_path / "home"))
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.mark.parametrize(
    ("template", "package", "framework"),
    [
        ("multiply-local-strands", "multiply_local_strands", "strands"),
        ("multiply-local-openai", "multiply_local_openai", "agents"),
        ("multiply-local-langgraph", "multiply_local_langgraph", "langgraph"),
        ("multiply-local-plain", "multiply_local_plain", "openai"),
        ("multiply-local-pydantic-ai", "multiply_local_pydantic_ai", "pydantic_ai"),
        ("multiply-local-adk", "multiply_local_adk", "google.adk"),
    ],
)
async def test_local_template_validates_and_scores_one(
    repo: Path, monkeypatch: pytest.MonkeyPatch, template: str, package: str, framework: str
) -> None:
    pytest.importorskip(framework)
    from osmosis_ai.testing import ScriptedPolicyServer, run_rollout

    applied = _osmosis("template", "apply", template, cwd=repo)
    assert applied.returncode == 0, applied.stderr
    validated = _osmosis("--json", "rollout", "validate", f"configs/eval/{template}.toml", cwd=repo)
    assert validated.returncode == 0, validated.stderr
    checks = {c["name"]: c["status"] for c in json.loads(validated.stdout)["resource"]["checks"]}
    assert checks["import"] == "ok", validated.stdout

    monkeypatch.syspath_prepend(str(repo / "rollouts" / template))
    workflow = importlib.import_module(f"{package}.workflow").MultiplyWorkflow
    grader = importlib.import_module(f"{package}.grader").MultiplyGrader
    config = importlib.import_module(f"{package}.config").config
    row = json.loads((repo / "data" / "multiply.jsonl").read_text().splitlines()[0])
    prompt = [
        {"role": "system", "content": row["system_prompt"]},
        {"role": "user", "content": row["user_prompt"]},
    ]
    async with ScriptedPolicyServer("multiply") as policy:
        result = await run_rollout(
            workflow, grader, prompt=prompt, label=row["ground_truth"], policy=policy,
            workflow_config=config,
        )  # fmt: skip
        calls = len(policy.requests)
    assert result.status == "success", (result.err_category, result.err_message)
    assert result.reward == 1.0
    assert calls == 2  # one tool call, then the answer


async def test_judge_template_validates_and_is_graded_by_the_scripted_judge(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rubric-judge-local offline: a scripted policy answers, the built-in scripted judge grades."""
    from osmosis_ai.testing import ScriptedPolicyServer, run_rollout

    template = "rubric-judge-local"
    assert _osmosis("template", "apply", template, cwd=repo).returncode == 0
    validated = _osmosis("--json", "rollout", "validate", f"configs/eval/{template}.toml", cwd=repo)
    assert validated.returncode == 0, validated.stderr
    monkeypatch.syspath_prepend(str(repo / "rollouts" / template))
    workflow = importlib.import_module("rubric_judge_local.workflow").AnswerWorkflow
    grader = importlib.import_module("rubric_judge_local.grader").RubricGrader
    row = json.loads((repo / "data" / "capitals.jsonl").read_text().splitlines()[0])
    rewards = []
    async with ScriptedPolicyServer("judge") as judge:
        monkeypatch.setenv("OSMOSIS_JUDGE_BASE_URL", judge.url)
        for answer in ("The capital of France is Paris.", "It is Lyon."):
            async with ScriptedPolicyServer([answer]) as policy:
                result = await run_rollout(
                    workflow, grader, prompt=row["user_prompt"], label=row["ground_truth"],
                    policy=policy,
                )  # fmt: skip
            assert result.status == "success", (result.err_category, result.err_message)
            assert result.sample is not None
            assert result.sample.metrics["judge_calls"] == 1
            rewards.append(result.reward)
        judged = [r.messages[1]["content"] for r in judge.requests]
    assert rewards == [1.0, 0.0]
    assert all("<<<BEGIN_GROUND_TRUTH>>>\nParis" in text for text in judged)


def test_harbor_template_needs_an_environment_choice(repo: Path) -> None:
    pytest.importorskip("harbor")
    assert _osmosis("template", "apply", "multiply-harbor-strands", cwd=repo).returncode == 0
    config = "configs/eval/multiply-harbor-strands.toml"
    env = {k: v for k, v in os.environ.items() if k != "OSMOSIS_HARBOR_ENV"}
    unset = _osmosis("--json", "rollout", "validate", config, cwd=repo, env=env)
    assert unset.returncode == 1
    message = json.loads(unset.stderr.strip().splitlines()[-1])["error"]["message"]
    assert "OSMOSIS_HARBOR_ENV" in message
    assert "skypilot, docker, local" in message
    chosen = _osmosis(
        "--json",
        "rollout",
        "validate",
        config,
        cwd=repo,
        env={**env, "OSMOSIS_HARBOR_ENV": "local"},
    )
    assert chosen.returncode == 0, chosen.stderr
    checks = {c["name"]: c for c in json.loads(chosen.stdout)["resource"]["checks"]}
    assert checks["import"]["details"]["attributes"]["backend"].endswith("HarborBackend")


HARBOR_RUN = """
import asyncio, importlib, json, os, sys, tempfile

tempfile.tempdir = os.environ["SCRATCH"]
sys.path.insert(0, "rollouts/multiply-harbor-strands")
main = importlib.import_module("main")  # builds HarborBackend from OSMOSIS_HARBOR_ENV=local
from osmosis_ai.rollout.context import RolloutContext
from osmosis_ai.rollout.types.execution import ExecutionRequest
from osmosis_ai.testing import ScriptedPolicyServer

row = json.loads(open("data/multiply.jsonl").readline())
prompt = [
    {"role": "system", "content": row["system_prompt"]},
    {"role": "user", "content": row["user_prompt"]},
]


async def go():
    async with ScriptedPolicyServer("multiply") as policy:
        with RolloutContext(
            chat_completions_url=policy.chat_completions_url("h1"), api_key="k", rollout_id="h1"
        ):
            outcome = await main.backend.execute(
                ExecutionRequest(id="h1", prompt=prompt, label=row["ground_truth"])
            )
        calls = len(policy.requests)
    await main.backend.shutdown()
    result = outcome.result
    print(json.dumps({
        "status": str(result.status), "error": result.err_message, "calls": calls,
        "reward": result.sample.reward if result.sample else None,
    }))


asyncio.run(go())
"""


def test_harbor_template_runs_one_real_trial(repo: Path, tmp_path: Path) -> None:
    """The workflow and grader run inside a real Harbor trial (the Docker-free local sandbox)."""
    pytest.importorskip("harbor")
    pytest.importorskip("strands")
    assert _osmosis("template", "apply", "multiply-harbor-strands", cwd=repo).returncode == 0
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {
        **os.environ,
        "OSMOSIS_HARBOR_ENV": "local",
        "SCRATCH": str(scratch),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    done = subprocess.run(
        [sys.executable, "-c", HARBOR_RUN],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"status": "success", "error": None, "calls": 2, "reward": 1.0}
