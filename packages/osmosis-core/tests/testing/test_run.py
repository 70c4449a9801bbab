"""run_rollout: a workflow and grader end to end against the scripted policy over real HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from osmosis_ai.rollout import (
    AgentWorkflow,
    AgentWorkflowConfig,
    AgentWorkflowContext,
    Grader,
    GraderContext,
    RolloutErrorCategory,
    RolloutStatus,
    get_rollout_context,
)
from osmosis_ai.rollout.errors import PolicyHTTPError
from osmosis_ai.testing import (
    ScriptedPolicyServer,
    error_reply,
    run_rollout,
    run_rollout_sync,
)


async def _chat(
    client: httpx.AsyncClient, messages: list[dict[str, Any]], stream: bool
) -> dict[str, Any]:
    """One policy call through the ambient rollout context (late binding, like integrations)."""
    rollout = get_rollout_context()
    assert rollout is not None
    url = rollout.chat_completions_url + "/chat/completions"
    headers = {"Authorization": f"Bearer {rollout.api_key}"}
    body = {"model": "policy", "messages": messages, "stream": stream}
    if not stream:
        response = await client.post(url, json=body, headers=headers)
        if response.status_code >= 400:
            raise PolicyHTTPError(response.status_code, response.text, url)
        return response.json()["choices"][0]["message"]
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    calls: dict[int, dict[str, Any]] = {}
    async with client.stream("POST", url, json=body, headers=headers) as response:
        if response.status_code >= 400:
            raise PolicyHTTPError(response.status_code, (await response.aread()).decode(), url)
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line.removeprefix("data: "))
            for choice in chunk["choices"]:
                delta = choice["delta"]
                message["content"] += delta.get("content") or ""
                for part in delta.get("tool_calls", []):
                    call = calls.setdefault(
                        part["index"],
                        {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                    )
                    call["id"] = part.get("id") or call["id"]
                    function = part.get("function", {})
                    call["function"]["name"] += function.get("name") or ""
                    call["function"]["arguments"] += function.get("arguments") or ""
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


class MultiplyAgent(AgentWorkflow[AgentWorkflowConfig]):
    """A minimal tool-using agent loop: call the policy, run tools, repeat until it answers."""

    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> list[dict[str, Any]]:
        stream = bool(ctx.config and getattr(ctx.config, "stream", False))
        messages = list(ctx.prompt)
        async with httpx.AsyncClient() as client:
            for _ in range(4):
                reply = await _chat(client, messages, stream)
                messages.append(reply)
                if not reply.get("tool_calls"):
                    break
                for call in reply["tool_calls"]:
                    args = json.loads(call["function"]["arguments"])
                    messages.append(
                        {
                            "role": "tool",
                            "tool_call_id": call["id"],
                            "content": str(args["a"] * args["b"]),
                        }
                    )
        return messages


class AnswerGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        assert ctx.sample is not None
        answer = str(ctx.sample.messages[-1].get("content", ""))
        ctx.set_reward(1.0 if answer.strip() == f"#### {ctx.label}" else 0.0)
        if ctx.artifacts_dir is not None:
            (ctx.artifacts_dir / "graded.txt").write_text(answer)


PROMPT = [{"role": "user", "content": "What is 6 times 7?"}]


@pytest.mark.parametrize("stream", [False, True])
async def test_multiply_rollout_end_to_end(stream: bool, osmosis_home: Path) -> None:
    async with ScriptedPolicyServer("multiply") as policy:
        result = await run_rollout(
            MultiplyAgent,
            AnswerGrader,
            prompt=PROMPT,
            label="42",
            policy=policy,
            workflow_config=AgentWorkflowConfig.model_validate(
                {"name": "multiply", "stream": stream}
            ),
            rollout_id="mul-1",
            save_trajectory=True,
        )
        requests = policy.requests_for("mul-1")
    assert result.status == RolloutStatus.SUCCESS
    assert result.reward == 1.0
    assert result.err_category is None
    assert result.sample is not None
    assert result.sample.messages[-1]["content"] == "#### 42"
    assert result.sample.label == "42"
    assert result.rollout_id == "mul-1"
    assert len(requests) == 2
    assert all(r.stream is stream for r in requests)
    assert requests[0].bearer_token == "osmosis-test-key"
    assert (osmosis_home / "mul-1" / "artifacts" / "graded.txt").read_text() == "#### 42"
    assert result.trajectory_path == osmosis_home / "mul-1" / "trajectory.json"
    assert result.trajectory_path is not None
    trajectory = json.loads(result.trajectory_path.read_text())
    agent_steps = [s for s in trajectory["steps"] if s["source"] == "agent"]
    assert [s["tool_calls"][0]["function_name"] for s in agent_steps[:1]] == ["multiply"]
    assert agent_steps[0]["observation"]["results"][0]["content"] == "42"
    assert trajectory["extra"]["osmosis"]["reward"] == 1.0


async def test_wrong_answer_earns_zero() -> None:
    async with ScriptedPolicyServer(["#### 41"]) as policy:
        result = await run_rollout(
            MultiplyAgent, AnswerGrader, prompt="What is 6 times 7?", label="42", policy=policy
        )
    assert result.status == RolloutStatus.SUCCESS
    assert result.reward == 0.0


async def test_policy_http_failure_is_an_http_error_not_reward_zero() -> None:
    async with ScriptedPolicyServer([error_reply(503, "overloaded")]) as policy:
        result = await run_rollout(
            MultiplyAgent, AnswerGrader, prompt=PROMPT, label="42", policy=policy
        )
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.HTTP_ERROR
    assert result.reward is None
    assert result.err_message is not None
    assert "503" in result.err_message
    assert result.outcome.grader is None


async def test_grade_false_and_plain_url_policy() -> None:
    async with ScriptedPolicyServer("multiply") as policy:
        result = await run_rollout(
            MultiplyAgent,
            AnswerGrader,
            prompt=PROMPT,
            label="42",
            policy=policy.chat_completions_url("plain") + "/",
            rollout_id="plain",
            grade=False,
        )
        assert len(policy.requests_for("plain")) == 2
    assert result.status == RolloutStatus.SUCCESS
    assert result.reward is None
    assert result.sample is not None
    assert result.sample.reward is None


async def test_agent_timeout_is_reported() -> None:
    from osmosis_ai.testing import delayed

    async with ScriptedPolicyServer([delayed(0.5, "late")]) as policy:
        result = await run_rollout(
            MultiplyAgent, prompt=PROMPT, policy=policy, agent_timeout_sec=0.1
        )
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.TIMEOUT
    assert result.err_message == "workflow exceeded its 0.1s deadline"


def test_run_rollout_sync_with_threaded_server() -> None:
    with ScriptedPolicyServer("multiply") as policy:
        result = run_rollout_sync(
            MultiplyAgent, AnswerGrader, prompt=PROMPT, label="42", policy=policy
        )
    assert result.reward == 1.0


async def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="policy must be"):
        await run_rollout(MultiplyAgent, prompt=PROMPT, policy=None)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="not running"):
        await run_rollout(MultiplyAgent, prompt=PROMPT, policy=ScriptedPolicyServer())
    with pytest.raises(ValueError, match="single path segment"):
        await run_rollout(MultiplyAgent, prompt=PROMPT, policy="http://x", rollout_id="a/b")


def _environment(rows: list[dict[str, Any]]) -> Any:
    from osmosis_ai.rollout.integrations.environments import (
        Environment,
        EnvironmentSpec,
    )

    return Environment(
        spec=EnvironmentSpec.parse("reasoning-gym:multiply"),
        workflow=MultiplyAgent,
        grader=AnswerGrader,
        rows=rows,
        workflow_config=AgentWorkflowConfig.model_validate({"name": "multiply", "stream": True}),
    )


async def test_an_environment_row_is_read_by_the_dataset_rules() -> None:
    from osmosis_ai.testing import run_environment_row

    env = _environment(
        [
            {"messages": PROMPT, "ground_truth": "41"},
            {"system_prompt": "Be brief.", "user_prompt": "What is 6 times 7?", "label": 42},
        ]
    )
    async with ScriptedPolicyServer("multiply") as policy:
        wrong = await run_environment_row(env, 0, policy=policy)
        right = await run_environment_row(env, 1, policy=policy)
        sent = policy.requests_for(right.rollout_id)
    assert (wrong.status, wrong.reward) == (RolloutStatus.SUCCESS, 0.0)
    assert (right.status, right.reward) == (RolloutStatus.SUCCESS, 1.0)
    assert right.sample is not None
    assert right.sample.label == "42"  # a label column, stringified as eval does
    assert sent[0].messages[:2] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 6 times 7?"},
    ]
    assert all(r.stream for r in sent)  # the environment's workflow_config is passed


async def test_an_environment_row_that_is_not_there_or_not_valid_says_why() -> None:
    from osmosis_ai.eval._impl.plan.dataset import DatasetError
    from osmosis_ai.testing import run_environment_row

    env = _environment([{"answer": "42"}])
    with pytest.raises(IndexError, match=r"reasoning-gym:multiply has no row 1: pass 0 to 0"):
        await run_environment_row(env, 1, policy="http://127.0.0.1:9")
    with pytest.raises(IndexError, match="it has no rows"):
        await run_environment_row(_environment([]), 0, policy="http://127.0.0.1:9")
    with pytest.raises(DatasetError, match=r"row 0: needs a 'user_prompt'.* present: answer"):
        await run_environment_row(env, 0, policy="http://127.0.0.1:9")
