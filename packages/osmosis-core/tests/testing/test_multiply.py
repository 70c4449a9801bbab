"""osmosis_ai.testing.multiply: the multiply checks the framework integrations share, run here on
a plain httpx workflow against the scripted policy over real HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from osmosis_ai.rollout import (
    AgentWorkflow,
    AgentWorkflowContext,
    Grader,
    GraderContext,
    get_rollout_context,
)
from osmosis_ai.rollout.errors import PolicyHTTPError
from osmosis_ai.testing import (
    ScriptedPolicyServer,
    check_multiply_rollout,
    check_policy_http_error,
    multiply_prompt,
    run_multiply_rollouts,
    tool_call_arguments,
)


class MultiplyAgent(AgentWorkflow):
    """Asks the policy, runs the ``multiply`` tool call it gets, asks again."""

    async def run(self, ctx: AgentWorkflowContext[Any]) -> list[dict[str, Any]]:
        rollout = get_rollout_context()
        assert rollout is not None
        url = rollout.chat_completions_url + "/chat/completions"
        messages = list(ctx.prompt)
        async with httpx.AsyncClient() as client:
            for _ in range(4):
                response = await client.post(url, json={"model": "m", "messages": messages})
                if response.status_code >= 400:
                    raise PolicyHTTPError(response.status_code, response.text, url)
                reply = response.json()["choices"][0]["message"]
                messages.append(reply)
                if not reply.get("tool_calls"):
                    break
                for call in reply["tool_calls"]:
                    args = json.loads(call["function"]["arguments"])
                    product = str(args["a"] * args["b"])
                    messages.append(
                        {"role": "tool", "tool_call_id": call["id"], "content": product}
                    )
        return messages


class AnswerGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        assert ctx.sample is not None
        answer = str(ctx.sample.messages[-1].get("content", ""))
        ctx.set_reward(1.0 if answer.strip() == f"#### {ctx.label}" else 0.0)


def test_multiply_prompt_is_one_user_message() -> None:
    assert multiply_prompt(6, 7) == [{"role": "user", "content": "What is 6 times 7?"}]


@pytest.fixture
async def multiply_policy() -> AsyncIterator[ScriptedPolicyServer]:
    async with ScriptedPolicyServer("multiply") as server:
        yield server


async def test_checks_pass_for_a_workflow_that_multiplies(
    multiply_policy: ScriptedPolicyServer,
) -> None:
    one = await check_multiply_rollout(MultiplyAgent, AnswerGrader, multiply_policy, 6, 7)
    assert one.sample is not None
    assert one.sample.messages[-1]["content"] == "#### 42"
    pairs = [(3, 5), (12, 34)]
    results = await run_multiply_rollouts(MultiplyAgent, AnswerGrader, multiply_policy, pairs)
    assert [r.reward for r in results] == [1.0, 1.0]
    # No system message here: the policy's first reply is message 1.
    assert [tool_call_arguments(r, index=1) for r in results] == [
        {"a": 3, "b": 5},
        {"a": 12, "b": 34},
    ]
    result = await check_policy_http_error(MultiplyAgent, AnswerGrader, status=503, body="busy")
    assert result.reward is None


async def test_check_multiply_rollout_fails_on_a_wrong_answer(
    multiply_policy: ScriptedPolicyServer,
) -> None:
    class WrongGrader(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            ctx.set_reward(0.0)

    with pytest.raises(AssertionError):
        await check_multiply_rollout(MultiplyAgent, WrongGrader, multiply_policy)


async def test_tool_call_arguments_says_what_is_missing() -> None:
    (failed,) = await run_multiply_rollouts(
        MultiplyAgent, AnswerGrader, "http://127.0.0.1:9/v1/rollouts/none", [(2, 3)]
    )
    with pytest.raises(AssertionError, match="has no chat trajectory"):
        tool_call_arguments(failed)
