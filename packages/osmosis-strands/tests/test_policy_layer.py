"""The Strands integration is a thin adapter over core's policy layer (osmosis_ai.rollout.policy).

Real Strands, a real scripted policy server over HTTP, and the server's request log.
"""

from __future__ import annotations

import pytest
from strands_multiply_rollout import multiply

import osmosis_ai.errors as errors
from osmosis_ai.rollout.context import RolloutContext
from osmosis_ai.rollout.integrations.agents.strands import (
    NoActiveRolloutError,
    OsmosisRolloutModel,
    OsmosisStrandsAgent,
    PolicyTimeoutError,
    aclose_clients,
)
from osmosis_ai.testing import ScriptedPolicyServer, delayed, error_reply


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "non-streaming"])
async def test_the_users_openai_account_headers_never_reach_the_policy(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-user")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-user")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-user-secret")
    await aclose_clients()  # the loop's base client is built under this environment
    async with ScriptedPolicyServer("multiply") as policy:
        with RolloutContext(
            chat_completions_url=policy.chat_completions_url("r-headers"),
            api_key="rollout-key",
            rollout_id="r-headers",
        ) as ctx:
            agent = OsmosisStrandsAgent(model=OsmosisRolloutModel(stream=stream), tools=[multiply])
            await agent.invoke_async("What is 6 times 7?")
            sample = await ctx.get_sample()
        requests = policy.requests_for("r-headers")
    await aclose_clients()
    assert sample is not None
    assert len(requests) == 2
    for request in requests:
        assert "openai-organization" not in request.headers
        assert "openai-project" not in request.headers
        assert "org-user" not in str(request.headers)
        assert "proj-user" not in str(request.headers)
        assert request.bearer_token == "rollout-key"


async def test_policy_errors_are_the_one_tree_from_osmosis_ai_errors() -> None:
    assert PolicyTimeoutError is errors.PolicyTimeoutError
    assert NoActiveRolloutError is errors.NoActiveRolloutError
    async with ScriptedPolicyServer([error_reply(502, "upstream gone")]) as policy:
        with RolloutContext(
            chat_completions_url=policy.chat_completions_url("r-502"), rollout_id="r-502"
        ):
            agent = OsmosisStrandsAgent(model=OsmosisRolloutModel(stream=False))
            with pytest.raises(errors.PolicyHTTPError) as caught:
                await agent.invoke_async("hi")
    error = caught.value
    assert error.status_code == 502
    assert "upstream gone" in error.body_excerpt
    assert error.url == policy.chat_completions_url("r-502")
    assert not isinstance(error, errors.PolicyTimeoutError)


async def test_no_active_rollout_is_core_error_with_what_to_do() -> None:
    agent = OsmosisStrandsAgent(model=OsmosisRolloutModel())
    with pytest.raises(errors.NoActiveRolloutError) as caught:
        await agent.invoke_async("hi")
    assert "OsmosisRolloutModel was called outside a rollout" in str(caught.value)
    assert "run_rollout" in str(caught.value)


async def test_timeout_through_a_rollout_is_the_one_policy_timeout_error() -> None:
    async with ScriptedPolicyServer([delayed(0.5, "#### 1")]) as policy:
        with RolloutContext(
            chat_completions_url=policy.chat_completions_url("r-slow"), rollout_id="r-slow"
        ):
            agent = OsmosisStrandsAgent(model=OsmosisRolloutModel(stream=False, timeout=0.1))
            with pytest.raises(errors.PolicyTimeoutError, match="timed out"):
                await agent.invoke_async("hi")


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "non-streaming"])
async def test_what_strict_servers_accept_and_no_placeholder_the_model_never_wrote(
    stream: bool,
) -> None:
    """llama.cpp's server answers HTTP 500 to an assistant ``content`` that is a list of parts,
    and Strands would send an empty reply back as the text ``[blank text]``. The policy sees
    text-only content as a string and its own empty reply as the empty string."""
    async with ScriptedPolicyServer(["", "first answer", "#### 42"]) as policy:
        with RolloutContext(
            chat_completions_url=policy.chat_completions_url("r-strict"), rollout_id="r-strict"
        ):
            agent = OsmosisStrandsAgent(model=OsmosisRolloutModel(stream=stream))
            for prompt in ("What is 6 times 7?", "Again?", "Final answer?"):
                await agent.invoke_async(prompt)
        requests = policy.requests_for("r-strict")
    last = requests[-1].body["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert [m["content"] for m in last] == [
        "What is 6 times 7?",
        "",
        "Again?",
        "first answer",
        "Final answer?",
    ]
    assert "[blank text]" not in str([r.body for r in requests])
