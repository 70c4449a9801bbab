"""The multiply task's checks that every framework integration's tests share (and a rollout
project can reuse): prompts, many rollouts at once, and rollouts in worker processes.

::

    from osmosis_ai.testing import run_multiply_rollouts, tool_call_arguments

    async def test_concurrent(multiply_policy):
        results = await run_multiply_rollouts(MyWorkflow, MyGrader, multiply_policy, [(6, 7), (3, 5)])
        assert [r.reward for r in results] == [1.0, 1.0]
        assert tool_call_arguments(results[0]) == {"a": 6, "b": 7}

The policy is the scripted ``"multiply"`` solver (:class:`~osmosis_ai.testing.ScriptedPolicyServer`,
or the ``multiply_policy`` fixture of :mod:`osmosis_ai.testing.pytest_plugin`).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from osmosis_ai.testing.policy_server import ScriptedPolicyServer
from osmosis_ai.testing.run import RolloutRunResult, run_rollout

__all__ = [
    "MultiplyPrompt",
    "check_multiply_rollout",
    "check_policy_http_error",
    "check_rollouts_in_worker_processes",
    "multiply_prompt",
    "run_multiply_rollouts",
    "tool_call_arguments",
]

#: A function from the two factors to a rollout's prompt (its message list).
MultiplyPrompt = Callable[[int, int], list[dict[str, Any]]]


def multiply_prompt(a: int, b: int) -> list[dict[str, Any]]:
    """One user message, ``What is A times B?``: what the scripted multiply solver answers."""
    return [{"role": "user", "content": f"What is {a} times {b}?"}]


async def check_multiply_rollout(
    workflow: Any,
    grader: Any,
    policy: ScriptedPolicyServer | str,
    a: int = 12,
    b: int = 34,
    *,
    prompt: MultiplyPrompt = multiply_prompt,
) -> RolloutRunResult:
    """Run one rollout of ``a`` times ``b`` (labelled ``a * b``) and assert that it succeeded
    with reward 1; return its result for further checks."""
    result = await run_rollout(
        workflow, grader, prompt=prompt(a, b), label=str(a * b), policy=policy
    )
    assert result.status == "success", result.err_message
    assert result.reward == 1.0
    return result


async def check_policy_http_error(
    workflow: Any,
    grader: Any,
    *,
    status: int = 500,
    body: str = "the GPU fell over",
    prompt: MultiplyPrompt = multiply_prompt,
) -> RolloutRunResult:
    """Run one rollout (12 times 34) against a policy that answers HTTP ``status`` with
    ``body``, and assert that it failed as ``http_error`` with a message naming the status, the
    body and the rollout's chat-completions URL; return its result for further checks."""
    from osmosis_ai.testing.replies import error_reply

    async with ScriptedPolicyServer([error_reply(status, body)]) as policy:
        result = await run_rollout(
            workflow, grader, prompt=prompt(12, 34), label="408", policy=policy
        )
    assert (result.status, result.err_category) == ("failure", "http_error")
    assert result.err_message is not None
    assert f"HTTP {status}" in result.err_message
    assert body in result.err_message
    assert f"/rollouts/{result.rollout_id}/chat/completions" in result.err_message
    return result


async def run_multiply_rollouts(
    workflow: Any,
    grader: Any,
    policy: ScriptedPolicyServer | str,
    pairs: Sequence[tuple[int, int]],
    *,
    prompt: MultiplyPrompt = multiply_prompt,
) -> list[RolloutRunResult]:
    """Run one rollout per ``(a, b)`` in ``pairs`` at the same time, each labelled ``a * b``
    (through :func:`~osmosis_ai.testing.run_rollout`); return the results in ``pairs``' order."""
    return list(
        await asyncio.gather(
            *(
                run_rollout(workflow, grader, prompt=prompt(a, b), label=str(a * b), policy=policy)
                for a, b in pairs
            )
        )
    )


def tool_call_arguments(result: RolloutRunResult, index: int = 2) -> dict[str, Any]:
    """The parsed JSON arguments of the first tool call in the sample's chat trajectory message
    ``index`` (2: after the system and user messages, the policy's first reply)."""
    if result.sample is None or result.sample.trajectory_messages is None:
        raise AssertionError(
            f"rollout {result.rollout_id} has no chat trajectory ({result.status}: "
            f"{result.err_message}); the workflow must record a sample with trajectory_messages"
        )
    call = result.sample.trajectory_messages[index]["tool_calls"][0]
    arguments: dict[str, Any] = json.loads(call["function"]["arguments"])
    return arguments


async def check_rollouts_in_worker_processes(
    rollout_dir: Path,
    home: Path,
    *,
    prompt: MultiplyPrompt = multiply_prompt,
    entry: str = "main.py",
    workers: int = 2,
    rollouts: int = 4,
) -> None:
    """Serve the rollout project in ``rollout_dir`` (``entry`` builds its app, as ``osmosis
    rollout serve`` loads it) with its rollouts in ``workers`` worker processes, run ``rollouts``
    multiply rollouts (``w0``, ``w1``, ...: ``3 + i`` times 7) through a real
    :class:`~osmosis_ai.rollout.client.RolloutClient` against the scripted multiply solver, and
    assert that each earned reward 1, ran in a worker (its workflow writes ``os.getpid()`` to
    ``artifacts/pid.txt``), sent the rollout's API key with each of its two policy calls, and
    saved its ``trajectory.json`` under ``home`` (``OSMOSIS_HOME``)."""
    from osmosis_ai.rollout.client import RolloutClient
    from osmosis_ai.rollout.entrypoint import load_rollout_app
    from osmosis_ai.rollout.server._impl.workers.pool import use_workers
    from osmosis_ai.rollout.types import RolloutStatus
    from osmosis_ai.testing.serving import serve_app

    app = load_rollout_app(rollout_dir, entry)
    pool = use_workers(app, workers)
    async with (
        ScriptedPolicyServer("multiply") as policy,
        serve_app(app, start_timeout_sec=300) as url,
        RolloutClient(url=url) as client,
    ):
        handles = [
            await client.run_rollout_async(
                prompt(3 + i, 7),
                policy.chat_completions_url(f"w{i}"),
                f"w{i}",
                llm_api_key="policy-key",
                label=str((3 + i) * 7),
            )
            for i in range(rollouts)
        ]
        results = [await handle for handle in handles]
        worker_pids = {w.pid for w in pool.workers}
        requests = policy.requests

    for result in results:
        assert result.status == RolloutStatus.SUCCESS, result.err_message
        assert result.sample is not None
        assert result.sample.reward == 1.0
    pids = {int((home / f"w{i}" / "artifacts" / "pid.txt").read_text()) for i in range(rollouts)}
    assert pids <= worker_pids
    assert os.getpid() not in pids
    # A tool call and an answer per rollout, from inside the workers.
    assert len(requests) == 2 * rollouts
    assert {r.bearer_token for r in requests} == {"policy-key"}
    assert all((home / f"w{i}" / "trajectory.json").exists() for i in range(rollouts))
