"""End to end with the real pieces: LocalBackend running a tool-calling workflow against the
scripted multiply policy, driven by ``RolloutClient`` (0.3.8) and by callbacks (0.3.0)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx

from osmosis_ai.rollout import (
    AgentWorkflow,
    AgentWorkflowConfig,
    AgentWorkflowContext,
    AgentWorkflowOutput,
    Grader,
    GraderContext,
    LocalBackend,
    get_rollout_context,
)
from osmosis_ai.rollout.client import RolloutClient
from osmosis_ai.rollout.server import create_rollout_server
from osmosis_ai.rollout.types import RolloutStatus
from osmosis_ai.testing import ScriptedPolicyServer

from .rollout_server_harness import CallbackListener, body, serve_app

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "multiply",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            },
        },
    }
]
PROMPT = [{"role": "user", "content": "What is 6 * 7?"}]


class MultiplyWorkflow(AgentWorkflow[AgentWorkflowConfig]):
    """Calls the policy through the ambient RolloutContext and runs its tool calls."""

    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
        rollout = get_rollout_context()
        assert rollout is not None
        if (ctx.metadata or {}).get("sleep"):
            await asyncio.sleep(float(ctx.metadata["sleep"]))  # type: ignore[index]
        messages: list[dict[str, Any]] = list(ctx.prompt)
        headers = {"Authorization": f"Bearer {rollout.api_key}"}
        async with httpx.AsyncClient() as http:
            for _ in range(4):
                response = await http.post(
                    f"{rollout.chat_completions_url}/chat/completions",
                    json={"model": "policy", "messages": messages, "tools": TOOLS},
                    headers=headers,
                )
                response.raise_for_status()
                message = response.json()["choices"][0]["message"]
                messages.append(message)
                calls = message.get("tool_calls") or []
                for call in calls:
                    args = json.loads(call["function"]["arguments"])
                    messages.append(
                        {
                            "role": "tool",
                            "tool_call_id": call["id"],
                            "content": str(args["a"] * args["b"]),
                        }
                    )
                if not calls:
                    break
        return AgentWorkflowOutput(messages=messages)


class ExactAnswerGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        assert ctx.sample is not None
        answer = ctx.sample.messages[-1].get("content")
        ctx.set_reward(1.0 if answer == f"#### {ctx.label}" else 0.0)
        if (ctx.metadata or {}).get("grader_raises"):
            raise ValueError("grader could not parse the label")


def _app(**options: Any) -> Any:
    backend = LocalBackend(workflow=MultiplyWorkflow, grader=ExactAnswerGrader)
    return create_rollout_server(backend=backend, configure_logging=False, **options)


async def test_poll_protocol_end_to_end(osmosis_home: Path) -> None:
    async with (
        ScriptedPolicyServer("multiply") as policy,
        serve_app(_app(result_wait_timeout_sec=2.0, polling_lease_timeout_sec=10.0)) as url,
        RolloutClient(url=url) as client,
    ):
        handles = [
            await client.run_rollout_async(
                PROMPT,
                policy.chat_completions_url(rid),
                rid,
                llm_api_key="llm-key",
                label=label,
                metadata=meta,
            )
            for rid, label, meta in (
                ("good", "42", {"task": "m"}),
                ("wrong", "41", {"task": "m"}),
                ("unlabelled", None, None),
                ("late", "42", {"sleep": 1.0}),
                ("raises", "42", {"grader_raises": True}),
            )
        ]
        # agent_timeout_sec is honoured end to end.
        timed = await client.run_rollout_async(
            PROMPT,
            policy.chat_completions_url("timed"),
            "timed",
            label="42",
            metadata={"sleep": 1.0},
            agent_timeout_sec=0.1,
        )
        good, wrong, unlabelled, late, raises = [await h for h in handles]
        timed_out = await timed
        policy_calls = policy.requests_for("good")
    assert good.status == RolloutStatus.SUCCESS
    assert good.sample is not None
    assert good.sample.reward == 1.0
    assert good.sample.messages[-1]["content"] == "#### 42"
    assert wrong.sample is not None
    assert wrong.sample.reward == 0.0
    # LocalBackend grades even without label and metadata (its documented choice).
    assert unlabelled.status == RolloutStatus.SUCCESS
    assert unlabelled.sample is not None
    assert unlabelled.sample.reward == 0.0
    assert late.status == RolloutStatus.SUCCESS
    assert (raises.status, raises.err_category) == (RolloutStatus.FAILURE, "validation_error")
    assert raises.sample is not None
    assert raises.sample.reward is None
    assert (timed_out.status, timed_out.err_category) == (RolloutStatus.FAILURE, "timeout")
    assert timed_out.err_message is not None
    assert timed_out.err_message.startswith("workflow exceeded its 0.1s deadline")
    assert len(policy_calls) == 2  # one tool call, then the answer
    assert all(call.bearer_token == "llm-key" for call in policy_calls)
    assert (osmosis_home / "good" / "trajectory.json").exists()


async def test_callback_protocol_end_to_end() -> None:
    listener = CallbackListener()
    async with (
        ScriptedPolicyServer("multiply") as policy,
        serve_app(listener.app) as base,
        serve_app(_app()) as url,
        httpx.AsyncClient(base_url=url) as http,
    ):
        payload = body(
            "cb1",
            chat_completions_url=policy.chat_completions_url("cb1"),
            completion_callback_url=listener.url(base, "completion", "cb1"),
            grader_callback_url=listener.url(base, "grader", "cb1"),
            controller_api_key="ctrl",
        )
        assert (await http.post("/rollout", json=payload)).status_code == 202
        completion, grader = await listener.wait_for(2)
        policy_calls = policy.requests_for("cb1")
    assert completion.body["status"] == "success"
    assert grader.body["status"] == "success"
    assert grader.body["sample"]["reward"] == 1.0
    assert "trajectory_messages" not in grader.body["sample"]
    assert all(call.bearer_token == "ctrl" for call in policy_calls)  # 0.3.0 key fallback


async def test_cancel_queued_and_running_rollouts_of_local_backend() -> None:
    backend = LocalBackend(workflow=MultiplyWorkflow, grader=ExactAnswerGrader, max_concurrency=1)
    app = create_rollout_server(backend=backend, configure_logging=False)
    async with (
        ScriptedPolicyServer("multiply") as policy,
        serve_app(app) as url,
        RolloutClient(url=url) as client,
    ):
        running = await client.run_rollout_async(
            PROMPT, policy.chat_completions_url("a"), "a", label="42", metadata={"sleep": 30}
        )
        queued = await client.run_rollout_async(
            PROMPT, policy.chat_completions_url("b"), "b", label="42", metadata={"task": "m"}
        )
        assert await running.wait_for_running() == RolloutStatus.RUNNING
        assert (await client.cancel_rollout("b")).dispositions == {"b": "cancelled_queued"}
        assert (await client.cancel_rollout("a")).dispositions == {"a": "cancelled_running"}
        first, second = await running, await queued
    assert first.status == RolloutStatus.CANCELLED
    assert second.status == RolloutStatus.CANCELLED
