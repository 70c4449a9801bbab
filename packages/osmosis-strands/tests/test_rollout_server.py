"""The template rollout through the rollout server: real uvicorn, the 0.3.8 poll protocol."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from strands_multiply_rollout import (
    MultiplyGrader,
    MultiplyWorkflow,
    multiply_prompt,
    multiply_workflow_config,
)

from osmosis_ai.rollout.backend.local import LocalBackend
from osmosis_ai.rollout.client import RolloutClient
from osmosis_ai.rollout.server import create_rollout_server
from osmosis_ai.rollout.types import RolloutErrorCategory, RolloutStatus
from osmosis_ai.testing import ScriptedPolicyServer, error_reply, serve_app


def _server() -> object:
    backend = LocalBackend(
        workflow=MultiplyWorkflow, workflow_config=multiply_workflow_config, grader=MultiplyGrader
    )
    return create_rollout_server(backend=backend, configure_logging=False)


async def test_template_rollout_through_the_rollout_server_earns_reward_one() -> None:
    async with (
        ScriptedPolicyServer("multiply") as policy,
        serve_app(_server()) as url,
        RolloutClient(url=url) as client,
    ):
        result = await client.run_rollout(
            multiply_prompt(12, 11),
            policy.chat_completions_url("srv-1"),
            "srv-1",
            llm_api_key="policy-key",
            label="132",
        )
        requests = policy.requests

    assert result.status == RolloutStatus.SUCCESS, result.err_message
    assert result.sample is not None
    assert result.sample.reward == 1.0
    assert result.sample.messages[-1]["content"] == [{"text": "#### 132"}]
    assert [r.rollout_id for r in requests] == ["srv-1", "srv-1"]
    assert {r.bearer_token for r in requests} == {"policy-key"}


async def test_policy_failure_through_the_rollout_server_is_an_http_error() -> None:
    async with (
        ScriptedPolicyServer([error_reply(503, "policy is reloading weights")]) as policy,
        serve_app(_server()) as url,
        RolloutClient(url=url) as client,
    ):
        result = await client.run_rollout(
            multiply_prompt(2, 2), policy.chat_completions_url("srv-2"), "srv-2", label="4"
        )
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.HTTP_ERROR
    assert result.err_message is not None
    assert "HTTP 503" in result.err_message
    assert "policy is reloading weights" in result.err_message


async def test_server_writes_a_trajectory_with_per_call_usage(osmosis_home: Path) -> None:
    pytest.importorskip("osmosis_ai.rollout.trajectory", reason="trajectory writer not landed")
    async with (
        ScriptedPolicyServer("multiply") as policy,
        serve_app(_server()) as url,
        RolloutClient(url=url) as client,
    ):
        result = await client.run_rollout(
            multiply_prompt(3, 5), policy.chat_completions_url("srv-3"), "srv-3", label="15"
        )
    assert result.status == RolloutStatus.SUCCESS, result.err_message
    document = json.loads((osmosis_home / "srv-3" / "trajectory.json").read_text())
    agent_steps = [step for step in document["steps"] if step["source"] == "agent"]
    assert len(agent_steps) == 2
    for step in agent_steps:
        assert step["metrics"]["prompt_tokens"] > 0
        assert step["metrics"]["completion_tokens"] > 0
