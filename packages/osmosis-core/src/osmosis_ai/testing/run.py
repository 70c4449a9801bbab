"""``run_rollout``: one workflow (and grader) end to end, the way the rollout server runs it.

It builds a :class:`~osmosis_ai.rollout.LocalBackend` and an ``ExecutionRequest`` whose
``chat_completions_url`` is the policy's rollout-scoped base URL, calls ``execute`` (which
enters the rollout's :class:`~osmosis_ai.rollout.RolloutContext`) and summarizes the outcome::

    async with ScriptedPolicyServer("multiply") as policy:
        result = await run_rollout(
            MultiplyWorkflow, MultiplyGrader,
            prompt=[{"role": "user", "content": "What is 6 times 7?"}],
            label="42", policy=policy,
        )
    assert result.status == "success"
    assert result.reward == 1.0
    assert result.sample.messages[-1]["content"] == "#### 42"

``policy`` is a running :class:`~osmosis_ai.testing.ScriptedPolicyServer` or any
chat-completions base URL (``str``). ``prompt`` may be a message list or a plain string (one
user message). Strings ``"module:attr"`` are accepted for workflow, grader and configs, as by
``LocalBackend``. Files go to ``<OSMOSIS_HOME>/<rollout_id>/`` — set ``OSMOSIS_HOME`` to a
temporary directory in tests; ``save_trajectory=True`` also writes the ATIF
``trajectory.json`` there, as the rollout server does (``result.trajectory_path``). :func:`run_rollout_sync` is the same for synchronous code (use a
server started with ``with``, which runs in its own thread).

:func:`run_environment_row` runs one row of a loaded
:class:`~osmosis_ai.rollout.integrations.environments.Environment` (a verifiers, Inspect or
Reasoning Gym task) the same way, reading the row as ``osmosis eval run --env`` does::

    env = load_environment("reasoning-gym:basic_arithmetic?size=2&seed=5")
    async with ScriptedPolicyServer([text_reply("<answer>7</answer>")]) as policy:
        result = await run_environment_row(env, 1, policy=policy)
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.backend.local import LocalBackend
from osmosis_ai.rollout.context import RolloutProgress
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest
from osmosis_ai.testing.policy_server import ScriptedPolicyServer

if TYPE_CHECKING:
    from osmosis_ai.rollout.agent_workflow import AgentWorkflow
    from osmosis_ai.rollout.grader import Grader
    from osmosis_ai.rollout.integrations.environments import Environment
    from osmosis_ai.rollout.types.config import BaseConfig
    from osmosis_ai.rollout.types.sample import RolloutSample

DEFAULT_TEST_API_KEY = "osmosis-test-key"


@dataclass(frozen=True, slots=True)
class RolloutRunResult:
    """What the controller would receive, plus the full two-phase outcome.

    ``reward`` is ``outcome.wire_reward``: the sample's reward only for a ``success`` that is
    not ``remove_sample``; ``outcome.workflow`` / ``outcome.grader`` hold each phase.
    """

    status: RolloutStatus
    sample: RolloutSample | None
    reward: float | None
    err_category: RolloutErrorCategory | None
    err_message: str | None
    outcome: ExecutionOutcome
    rollout_id: str = ""
    trajectory_path: Path | None = None


def _prompt(prompt: list[dict[str, Any]] | str) -> list[dict[str, Any]]:
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    if not isinstance(prompt, list):
        raise TypeError("prompt must be a list of chat messages or a string")
    return prompt


async def run_rollout(
    workflow: type[AgentWorkflow[Any]] | str,
    grader: type[Grader] | str | None = None,
    *,
    prompt: list[dict[str, Any]] | str,
    label: str | None = None,
    metadata: dict[str, Any] | None = None,
    policy: ScriptedPolicyServer | str,
    workflow_config: BaseConfig | str | None = None,
    grader_config: BaseConfig | str | None = None,
    agent_timeout_sec: float | None = None,
    grader_timeout_sec: float | None = None,
    rollout_id: str | None = None,
    grade: bool = True,
    api_key: str = DEFAULT_TEST_API_KEY,
    save_trajectory: bool = False,
) -> RolloutRunResult:
    """Run one rollout through ``LocalBackend`` against ``policy``; see the module docstring."""
    rollout_id = rollout_id or f"test-{uuid.uuid4().hex[:12]}"
    if isinstance(policy, ScriptedPolicyServer):
        url = policy.chat_completions_url(rollout_id)
    elif isinstance(policy, str) and policy:
        url = policy.rstrip("/")
    else:
        raise TypeError(
            "policy must be a running ScriptedPolicyServer or a chat-completions base URL"
        )
    request = ExecutionRequest(
        id=rollout_id,
        prompt=_prompt(prompt),
        label=label,
        metadata=metadata,
        agent_timeout_sec=agent_timeout_sec,
        grader_timeout_sec=grader_timeout_sec,
        grade=grade,
        chat_completions_url=url,
        api_key=api_key,
    )
    backend = LocalBackend(
        workflow=workflow,
        workflow_config=workflow_config,
        grader=grader,
        grader_config=grader_config,
    )
    outcome = await backend.execute(request, RolloutProgress())
    await backend.shutdown()
    trajectory_path = None
    if save_trajectory:
        from osmosis_ai.rollout.trajectory import save_trajectory as save

        saved = outcome.result_to_save
        trajectory_path = await save(
            rollout_id=rollout_id,
            result=saved,
            request_label=label,
            request_metadata=metadata,
            diagnostics=saved.extra_fields,
        )
    result = outcome.result
    return RolloutRunResult(
        status=result.status,
        sample=result.sample,
        reward=result.wire_reward,
        err_category=result.err_category,
        err_message=result.err_message,
        outcome=outcome,
        rollout_id=rollout_id,
        trajectory_path=trajectory_path,
    )


async def run_environment_row(
    env: Environment, index: int = 0, *, policy: ScriptedPolicyServer | str
) -> RolloutRunResult:
    """Row ``index`` of ``env`` through :func:`run_rollout` against ``policy``: the
    environment's workflow, grader and configs, and the row read by the dataset rules of
    ``osmosis eval run`` (``docs/dataset-format.md``: ``messages``, or ``system_prompt`` and
    ``user_prompt``; ``ground_truth`` or ``label``; ``metadata``), so a test sees what one
    row of ``osmosis eval run --env`` would. A row that is not a valid rollout input raises
    the error ``osmosis eval run`` gives for it (it names the row and the fix)."""
    # The one owner of the row rules (eval writes an environment's rows as its dataset file).
    from osmosis_ai.eval._impl.plan.dataset import normalize_row

    if not 0 <= index < len(env.rows):
        valid = f"pass 0 to {len(env.rows) - 1}" if env.rows else "it has no rows"
        raise IndexError(f"{env.spec} has no row {index}: {valid}")
    row = normalize_row(index, env.rows[index])
    return await run_rollout(
        env.workflow,
        env.grader,
        prompt=row.initial_messages,
        label=row.label,
        metadata=row.metadata,
        policy=policy,
        workflow_config=env.workflow_config,
        grader_config=env.grader_config,
    )


def run_rollout_sync(*args: Any, **kwargs: Any) -> RolloutRunResult:
    """:func:`run_rollout` from synchronous code (not from inside a running event loop)."""
    return asyncio.run(run_rollout(*args, **kwargs))
