"""A rollout entrypoint for the worker-pool tests: a tool-calling multiply workflow whose
metadata can make it sleep, block its event loop, or kill its own process."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
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
from osmosis_ai.rollout.backend.base import ExecutionBackend
from osmosis_ai.rollout.server import create_rollout_server, serve
from osmosis_ai.rollout.types import (
    ExecutionOutcome,
    ExecutionRequest,
    ExecutionResult,
    RolloutSample,
    RolloutStatus,
)

TOOLS = [{"type": "function", "function": {"name": "multiply", "parameters": {"type": "object"}}}]


class MultiplyWorkflow(AgentWorkflow[AgentWorkflowConfig]):
    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
        meta = ctx.metadata or {}
        if meta.get("crash"):
            os.kill(os.getpid(), signal.SIGKILL)
        if meta.get("block"):
            time.sleep(float(meta["block"]))  # noqa: ASYNC251 - a hung event loop, on purpose
        if meta.get("sleep"):
            await asyncio.sleep(float(meta["sleep"]))
        rollout = get_rollout_context()
        assert rollout is not None
        messages: list[dict[str, Any]] = list(ctx.prompt)
        async with httpx.AsyncClient() as http:
            for _ in range(4):
                response = await http.post(
                    f"{rollout.chat_completions_url}/chat/completions",
                    json={"model": "policy", "messages": messages, "tools": TOOLS},
                    headers={"Authorization": f"Bearer {rollout.api_key}"},
                )
                response.raise_for_status()
                message = response.json()["choices"][0]["message"]
                messages.append(message)
                calls = message.get("tool_calls") or []
                for call in calls:
                    args = json.loads(call["function"]["arguments"])
                    content = str(args["a"] * args["b"])
                    messages.append(
                        {"role": "tool", "tool_call_id": call["id"], "content": content}
                    )
                if not calls:
                    break
        assert ctx.artifacts_dir is not None
        (ctx.artifacts_dir / "pid.txt").write_text(str(os.getpid()))
        return AgentWorkflowOutput(messages=messages, metrics={"pid": float(os.getpid())})


class ExactAnswerGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        assert ctx.sample is not None
        ctx.set_reward(
            1.0 if ctx.sample.messages[-1].get("content") == f"#### {ctx.label}" else 0.0
        )


class LegacyBackend(ExecutionBackend):
    """Written for osmosis-ai 0.3.8: ``execute(request)`` without ``progress``, reading the
    ambient rollout context for the policy endpoint and the status."""

    async def execute(self, request: ExecutionRequest) -> ExecutionOutcome:  # pyright: ignore[reportIncompatibleMethodOverride]
        rollout = get_rollout_context()
        assert rollout is not None
        assert rollout.progress is not None
        status = rollout.progress.status.value  # the server reported `running` before the call
        async with httpx.AsyncClient() as http:
            response = await http.post(
                f"{rollout.chat_completions_url}/chat/completions",
                json={"model": "policy", "messages": request.prompt},
                headers={"Authorization": f"Bearer {rollout.api_key}"},
            )
            response.raise_for_status()
        await rollout.set_status(RolloutStatus.GRADING)
        sample = RolloutSample(
            messages=[*request.prompt, {"role": "assistant", "content": f"#### {request.label}"}],
            reward=1.0,
            metrics={"pid": float(os.getpid()), "running_at_call": float(status == "running")},
        )
        return ExecutionOutcome(
            workflow=ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample)
        )


backend: ExecutionBackend = LocalBackend(
    workflow=MultiplyWorkflow,
    grader=ExactAnswerGrader,
    max_concurrency=int(os.environ.get("WORKER_TEST_MAX_CONCURRENCY", "0")) or None,
    max_queue_depth=int(os.environ.get("WORKER_TEST_MAX_QUEUE", "0")) or None,
)
if os.environ.get("WORKER_TEST_LEGACY") == "1":
    backend = LegacyBackend()
nice = os.environ.get("WORKER_TEST_NICE")  # create_rollout_server(worker_nice=...)
app = create_rollout_server(
    backend=backend,
    configure_logging=os.environ.get("WORKER_TEST_LOGGING") == "1",
    worker_nice=int(nice) if nice else None,
)

if __name__ == "__main__":
    serve(app, port=int(os.environ.get("WORKER_TEST_PORT", "0")), workers=2)
