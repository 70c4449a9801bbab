"""``harbor:NAME@VERSION?registry=FOLDER``: a dataset of a local Harbor registry, resolved by
Harbor's own registry client, run through a real rollout server (HarborBackend in dataset mode,
real Harbor trials in the Docker-free local sandbox). Rewards are checked against the same task
run as a plain Harbor trial."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harbor.models.job.config import RetryConfig
from harbor.models.trial.config import AgentConfig, TaskConfig, TrialConfig
from harbor.trial.queue import TrialQueue

from osmosis_ai.rollout.backend.harbor import local_environment_config
from osmosis_ai.rollout.client import RolloutClient
from osmosis_ai.rollout.integrations.environments import (
    EnvironmentSpecError,
    environment_source,
    load_environment,
)
from osmosis_ai.rollout.types import RolloutStatus
from osmosis_ai.testing import ScriptedPolicyServer, serve_app

from ...conftest import write_task


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    """A registry folder: registry.json naming tasks by paths relative to it."""
    folder = tmp_path / "registry"
    write_task(folder / "tasks" / "hello")
    write_task(
        folder / "tasks" / "quarter", solve="true", test="echo 0.25 > /logs/verifier/reward.txt"
    )
    write_task(folder / "tasks" / "typo", solve="echo helo > /app/hello.txt")
    tasks = [{"name": n, "path": f"tasks/{n}"} for n in ("hello", "quarter", "typo")]
    datasets = [
        {"name": "demo", "version": "1.0", "description": "three tasks", "tasks": tasks},
        {"name": "demo", "version": "0.9", "description": "one task", "tasks": tasks[:1]},
    ]
    (folder / "registry.json").write_text(json.dumps(datasets))
    return folder


async def _harbor_reward(task_dir: Path, trials_dir: Path) -> float:
    """The reward Harbor itself gives the oracle's answer to the task."""
    queue = TrialQueue(1, retry_config=RetryConfig(max_retries=0))
    config = TrialConfig(
        task=TaskConfig(path=task_dir),
        agent=AgentConfig(name="oracle"),
        environment=local_environment_config(),
        trials_dir=trials_dir,
    )
    result = await queue.submit(config)
    assert result.verifier_result is not None
    assert result.verifier_result.rewards is not None
    return float(result.verifier_result.rewards["reward"])


async def test_local_registry_dataset_through_a_rollout_server(
    registry: Path, tmp_path: Path
) -> None:
    env = load_environment(f"harbor:demo@1.0?registry={registry}&agent=oracle&sandbox=local")
    assert env.rows[0]["messages"] == [
        {"role": "user", "content": "Create /app/hello.txt containing hello"}
    ]
    assert [row["metadata"] for row in env.rows] == [
        {"harbor_task_id": "hello"},
        {"harbor_task_id": "quarter"},
        {"harbor_task_id": "typo"},
    ]
    assert env.needs == ("sandbox",)
    results: dict[str, Any] = {}
    async with (
        ScriptedPolicyServer("instant") as policy,
        serve_app(env.create_app(trials_dir=tmp_path / "trials")) as url,
        RolloutClient(url=url) as client,
    ):
        handles = {
            row["metadata"]["harbor_task_id"]: await client.run_rollout_async(
                [],
                policy.chat_completions_url(row["metadata"]["harbor_task_id"]),
                row["metadata"]["harbor_task_id"],
                metadata=row["metadata"],
            )
            for row in env.rows
        }
        for name, handle in handles.items():
            results[name] = await handle
    for name in ("hello", "quarter", "typo"):
        assert results[name].status == RolloutStatus.SUCCESS, results[name].err_message
        expected = await _harbor_reward(registry / "tasks" / name, tmp_path / "harbor-trials")
        assert results[name].sample.reward == expected
    assert [results[n].sample.reward for n in ("hello", "quarter", "typo")] == [1.0, 0.25, 0.0]


@pytest.fixture
def answer_project() -> Iterator[Path]:
    project = Path(__file__).parent / "fixtures" / "answer_project"
    sys.path.insert(0, str(project))
    try:
        yield project
    finally:
        sys.path.remove(str(project))
        sys.modules.pop("answer_rollout", None)


async def test_an_agent_workflow_answers_from_the_policy_in_the_sandbox(
    registry: Path, tmp_path: Path, answer_project: Path
) -> None:
    """agent=module:Class: the workflow runs inside each task's trial, gets the task's
    instruction as its prompt, calls the policy, and the task's own verifier scores it."""
    env = load_environment(
        f"harbor:demo@0.9?registry={registry}&agent=answer_rollout:WriteTheAnswer&sandbox=local"
    )
    async with (
        ScriptedPolicyServer(["hello"]) as policy,
        serve_app(env.create_app(trials_dir=tmp_path / "trials")) as url,
        RolloutClient(url=url) as client,
    ):
        row = env.rows[0]
        result = await client.run_rollout(
            row["messages"], policy.chat_completions_url("w1"), "w1", metadata=row["metadata"]
        )
        calls = policy.requests_for("w1")
    assert result.status == RolloutStatus.SUCCESS, result.err_message
    assert result.sample is not None
    assert result.sample.reward == 1.0  # the verifier found "hello", what the policy said
    assert calls[0].body["messages"] == row["messages"]


def test_versions_and_listing_come_from_harbor(registry: Path) -> None:
    # Without a version Harbor's resolve_version picks the highest one.
    assert len(load_environment(f"harbor:demo?registry={registry}&sandbox=local").rows) == 3
    assert len(load_environment(f"harbor:demo@0.9?registry={registry / 'registry.json'}").rows) == 1
    source: Any = environment_source("harbor")
    listed = {info.spec: info.rows for info in source.list(str(registry))}
    assert listed == {"harbor:demo@1.0": 3, "harbor:demo@0.9": 1}


def test_errors_say_what_to_fix(registry: Path, tmp_path: Path) -> None:
    with pytest.raises(EnvironmentSpecError, match=r"no dataset 'nope@1.0'.*org/name@ref"):
        load_environment(f"harbor:nope@1.0?registry={registry}")
    with pytest.raises(EnvironmentSpecError, match=r"no Harbor registry file.*registry.json"):
        load_environment(f"harbor:demo@1.0?registry={tmp_path / 'missing'}")
    with pytest.raises(EnvironmentSpecError, match=r"Unknown option\(s\) colour.*registry"):
        load_environment(f"harbor:demo@1.0?registry={registry}&colour=red")
    with pytest.raises(EnvironmentSpecError, match=r"agent='no_such_mod:X'.*module:Class"):
        load_environment(f"harbor:demo@1.0?registry={registry}&agent=no_such_mod:X")
