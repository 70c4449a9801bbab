"""``ctx.policy``: a framework-free workflow reaches the rollout's policy through its context
(needs ``openai``, which each integration installs; the policy is the scripted server on loopback)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

pytest.importorskip("openai")

from osmosis_ai.errors import NoActiveRolloutError
from osmosis_ai.rollout import (
    AgentWorkflow,
    AgentWorkflowConfig,
    AgentWorkflowContext,
    Grader,
    GraderContext,
    PolicyEndpoint,
    RolloutContext,
)
from osmosis_ai.rollout.policy import NO_API_KEY, aclose_policy_clients
from osmosis_ai.testing import ScriptedPolicyServer, run_rollout

SEEN: list[PolicyEndpoint] = []


class AskOnce(AgentWorkflow[AgentWorkflowConfig]):
    """One policy call through ``ctx.policy.client()``; the conversation is the sample."""

    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> list[dict[str, Any]]:
        SEEN.append(ctx.policy)
        reply = await ctx.policy.client().chat.completions.create(
            model=ctx.policy.model, messages=cast(Any, ctx.prompt)
        )
        return [*ctx.prompt, {"role": "assistant", "content": reply.choices[0].message.content}]


class AskInThread(AgentWorkflow[AgentWorkflowConfig]):
    """The same call from a worker thread with the blocking client."""

    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> list[dict[str, Any]]:
        endpoint = ctx.policy  # read in the rollout's task, used in the thread

        def call() -> str | None:
            with endpoint.sync_client() as client:
                reply = client.chat.completions.create(
                    model=endpoint.model, messages=cast(Any, ctx.prompt)
                )
            return reply.choices[0].message.content

        text = await asyncio.to_thread(call)
        return [*ctx.prompt, {"role": "assistant", "content": text}]


class EchoGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        assert ctx.sample is not None
        ctx.set_reward(1.0 if ctx.sample.messages[-1]["content"] == ctx.label else 0.0)


async def test_a_plain_workflow_calls_the_rollouts_policy_through_ctx_policy() -> None:
    SEEN.clear()
    async with ScriptedPolicyServer("echo") as server:
        result = await run_rollout(
            AskOnce, EchoGrader, prompt="hello", label="hello", policy=server,
            rollout_id="r-plain", api_key="k-plain",
        )  # fmt: skip
        (request,) = server.requests_for("r-plain")
    await aclose_policy_clients()
    assert (result.status, result.reward) == ("success", 1.0)
    (endpoint,) = SEEN
    assert endpoint.base_url == server.chat_completions_url("r-plain")
    assert (endpoint.api_key, endpoint.rollout_id, endpoint.model) == (
        "k-plain",
        "r-plain",
        "osmosis-rollout",
    )
    assert request.bearer_token == "k-plain"
    assert request.body["model"] == "osmosis-rollout"
    assert "k-plain" not in repr(endpoint)


async def test_the_blocking_client_keeps_the_users_openai_account_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-user")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-user")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-user-secret")
    async with ScriptedPolicyServer("echo") as server:
        result = await run_rollout(
            AskInThread, EchoGrader, prompt="hi", label="hi", policy=server,
            rollout_id="r-sync", api_key="k-sync",
        )  # fmt: skip
        (request,) = server.requests_for("r-sync")
    assert (result.status, result.reward) == ("success", 1.0)
    assert request.bearer_token == "k-sync"
    assert "openai-organization" not in request.headers
    assert "openai-project" not in request.headers


def test_ctx_policy_outside_a_rollout_says_how_to_run_one() -> None:
    ctx: AgentWorkflowContext[AgentWorkflowConfig] = AgentWorkflowContext(prompt=[])
    with pytest.raises(NoActiveRolloutError, match=r"ctx\.policy was called outside a rollout"):
        _ = ctx.policy


def test_a_rollout_without_a_key_gets_the_no_key_placeholder() -> None:
    ctx: AgentWorkflowContext[AgentWorkflowConfig] = AgentWorkflowContext(prompt=[])
    with RolloutContext(chat_completions_url="http://127.0.0.1:9/v1", rollout_id="r0"):
        endpoint = ctx.policy
    assert (endpoint.base_url, endpoint.api_key) == ("http://127.0.0.1:9/v1", NO_API_KEY)
