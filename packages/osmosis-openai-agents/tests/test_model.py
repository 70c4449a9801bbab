"""OsmosisRolloutModel: late binding to the active rollout, settings on the wire, misuse errors."""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any

import pytest
from agents import ModelSettings, Runner, function_tool

from osmosis_ai.errors import NoActiveRolloutError
from osmosis_ai.rollout import RolloutContext
from osmosis_ai.rollout.integrations.agents.openai_agents import (
    OsmosisAgent,
    OsmosisLitellmModel,
    OsmosisMemorySession,
    OsmosisRolloutModel,
)
from osmosis_ai.testing import Reply, ScriptedPolicyServer, ToolCall, multiply_solver


@function_tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


# Built at import time, long before any rollout exists: the model must bind per call.
IMPORT_TIME_AGENT = OsmosisAgent(
    name="calculator",
    instructions="Multiply with the tool, then answer '#### <product>'.",
    model=OsmosisRolloutModel(),
    model_settings=ModelSettings(
        temperature=0.7,
        top_p=0.9,
        max_tokens=128,
        extra_headers={"x-experiment": "osmosis-test"},
        extra_body={"top_k": 5},
    ),
    tools=[multiply],
)


def rollout(
    policy: ScriptedPolicyServer, rollout_id: str, api_key: str = "k-test"
) -> RolloutContext:
    return RolloutContext(
        chat_completions_url=policy.chat_completions_url(rollout_id),
        api_key=api_key,
        rollout_id=rollout_id,
    )


@pytest.mark.parametrize("streaming", [False, True], ids=["run", "run_streamed"])
async def test_model_settings_reach_the_wire(
    multiply_policy: ScriptedPolicyServer, streaming: bool
) -> None:
    with rollout(multiply_policy, "r-wire"):
        session = OsmosisMemorySession()
        prompt = "What is 12 times 34?"
        if streaming:
            streamed = Runner.run_streamed(IMPORT_TIME_AGENT, prompt, session=session, max_turns=8)
            async for _ in streamed.stream_events():
                pass
            final = streamed.final_output
        else:
            final = (await Runner.run(IMPORT_TIME_AGENT, prompt, session=session)).final_output
    assert final == "#### 408"
    requests = multiply_policy.requests_for("r-wire")
    assert len(requests) == 2
    for request in requests:
        assert request.bearer_token == "k-test"
        assert request.headers["x-experiment"] == "osmosis-test"
        body = request.body
        assert body["model"] == "osmosis-rollout"
        assert (body["temperature"], body["top_p"], body["max_tokens"], body["top_k"]) == (
            0.7,
            0.9,
            128,
            5,
        )
        assert bool(body.get("stream")) is streaming
        assert body["messages"][0] == {
            "role": "system",
            "content": "Multiply with the tool, then answer '#### <product>'.",
        }
    if streaming:
        # Usage is requested so that the trajectory can carry per-call token counts.
        assert requests[0].body["stream_options"] == {"include_usage": True}


async def test_clones_and_copies_bind_to_the_rollout_that_runs_them(
    multiply_policy: ScriptedPolicyServer,
) -> None:
    clone = IMPORT_TIME_AGENT.clone(name="clone")
    replaced = dataclasses.replace(IMPORT_TIME_AGENT, name="replaced")
    copied = copy.copy(IMPORT_TIME_AGENT)
    assert isinstance(clone, OsmosisAgent)
    assert isinstance(replaced, OsmosisAgent)
    for index, agent in enumerate([clone, replaced, copied]):
        rollout_id = f"r-copy-{index}"
        with rollout(multiply_policy, rollout_id):
            result = await Runner.run(agent, "7 * 8", session=OsmosisMemorySession())
        assert result.final_output == "#### 56"
        assert len(multiply_policy.requests_for(rollout_id)) == 2


async def test_handoff_target_reaches_the_same_rollout() -> None:
    specialist = OsmosisAgent(
        name="specialist",
        instructions="You are the multiplication specialist.",
        tools=[multiply],
    )
    triage = OsmosisAgent(
        name="triage",
        instructions="Hand multiplication questions to the specialist.",
        handoffs=[specialist],
    )

    def policy(body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        if messages[0]["content"].startswith("Hand multiplication"):
            return Reply(tool_calls=(ToolCall(name="transfer_to_specialist", arguments={}),))
        called = [call["function"]["name"] for m in messages for call in m.get("tool_calls") or ()]
        if "multiply" in called:
            return multiply_solver(body)  # the tool result is there: answer
        operands = [int(n) for n in re.findall(r"\d+", messages[1]["content"])]
        return Reply(tool_calls=(ToolCall("multiply", {"a": operands[0], "b": operands[1]}),))

    async with ScriptedPolicyServer(policy) as server:
        with rollout(server, "r-handoff") as ctx:
            result = await Runner.run(triage, "What is 6 * 9?", session=OsmosisMemorySession())
            sample = await ctx.get_sample()
    assert result.final_output == "#### 54"
    assert result.last_agent.name == "specialist"
    requests = server.requests_for("r-handoff")
    assert [r.messages[0]["content"] for r in requests] == [
        "Hand multiplication questions to the specialist.",
        "You are the multiplication specialist.",
        "You are the multiplication specialist.",
    ]
    assert sample is not None
    systems = [m["content"] for m in sample.messages if m.get("role") == "system"]
    assert systems == [
        "Hand multiplication questions to the specialist.",
        "You are the multiplication specialist.",
    ]
    # The specialist's instructions sit right before its first output, as the model saw them.
    index = next(i for i, m in enumerate(sample.messages) if m.get("content") == systems[1])
    assert sample.messages[index - 1]["type"] == "function_call_output"
    assert sample.messages[index + 1]["type"] == "function_call"


def test_agent_without_model_or_with_a_name_uses_the_policy() -> None:
    plain = OsmosisAgent(name="a")
    named = OsmosisAgent(name="b", model="openai/my-policy")
    assert isinstance(plain.model, OsmosisRolloutModel)
    assert plain.model.model == "osmosis-rollout"
    assert isinstance(named.model, OsmosisRolloutModel)
    assert named.model.model == "my-policy"
    # GPT-5 default settings (reasoning, verbosity) must not be sent to the policy.
    assert plain.model_settings == ModelSettings()
    assert isinstance(plain.clone(model="other").model, OsmosisRolloutModel)
    assert isinstance(OsmosisLitellmModel(), OsmosisRolloutModel)


def test_handoff_to_a_plain_agent_without_model_warns(caplog: pytest.LogCaptureFixture) -> None:
    from agents import Agent

    with caplog.at_level("WARNING"):
        OsmosisAgent(name="triage", handoffs=[Agent(name="plain")])
    assert "would call the SDK's default provider" in caplog.text


def test_invalid_model_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="non-empty model name"):
        OsmosisRolloutModel("")
    with pytest.raises(ValueError, match="max_retries"):
        OsmosisRolloutModel(max_retries=-1)
    with pytest.raises(ValueError, match="timeout"):
        OsmosisRolloutModel(timeout=0)


async def test_outside_a_rollout_the_model_says_what_to_do() -> None:
    with pytest.raises(NoActiveRolloutError, match="outside a rollout") as info:
        await Runner.run(IMPORT_TIME_AGENT, "2 * 3", session=OsmosisMemorySession())
    assert "RolloutContext" in str(info.value)
    assert isinstance(info.value, RuntimeError)  # 0.3 raised a RuntimeError


async def test_a_run_without_the_session_says_what_to_do(
    multiply_policy: ScriptedPolicyServer,
) -> None:
    with rollout(multiply_policy, "r-nosession"), pytest.raises(RuntimeError) as info:
        await Runner.run(IMPORT_TIME_AGENT, "2 * 3")
    assert "session=OsmosisMemorySession()" in str(info.value)
    assert multiply_policy.requests_for("r-nosession") == []


async def test_require_session_false_allows_runs_without_a_sample_source(
    multiply_policy: ScriptedPolicyServer,
) -> None:
    agent = IMPORT_TIME_AGENT.clone(model=OsmosisRolloutModel(require_session=False))
    with rollout(multiply_policy, "r-free"):
        result = await Runner.run(agent, "2 * 3")
    assert result.final_output == "#### 6"


async def test_a_rollout_without_a_policy_url_is_explained() -> None:
    with RolloutContext(rollout_id="r-nourl"), pytest.raises(RuntimeError) as info:
        await Runner.run(IMPORT_TIME_AGENT, "2 * 3", session=OsmosisMemorySession())
    assert "OSMOSIS_CHAT_COMPLETIONS_URL" in str(info.value)


async def test_the_users_openai_credentials_never_reach_the_policy(
    multiply_policy: ScriptedPolicyServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-user-secret")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/elsewhere")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-user")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-user")
    with RolloutContext(
        chat_completions_url=multiply_policy.chat_completions_url("r-nokey"), rollout_id="r-nokey"
    ):
        result = await Runner.run(IMPORT_TIME_AGENT, "3 * 3", session=OsmosisMemorySession())
    assert result.final_output == "#### 9"
    for request in multiply_policy.requests_for("r-nokey"):
        assert "openai-organization" not in request.headers
        assert "openai-project" not in request.headers
        headers = str(request.headers)
        assert "sk-user-secret" not in headers
        assert "org-user" not in headers
        assert "proj-user" not in headers
        assert request.bearer_token == "EMPTY"
