"""The execution engine (``osmosis_ai.rollout._execution``): the one definition of a reward.

Each case runs the engine's phases directly (as the Harbor sandbox runner does) and the same
workflow/grader through ``LocalBackend``, and both must agree.
"""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
from typing import Any

import pytest
from pydantic import ValidationError

from osmosis_ai.rollout import (
    AgentWorkflow,
    AgentWorkflowConfig,
    AgentWorkflowContext,
    AgentWorkflowOutput,
    ExecutionOutcome,
    ExecutionRequest,
    ExecutionResult,
    Grader,
    GraderContext,
    LocalBackend,
    RolloutContext,
    RolloutErrorCategory,
    RolloutSample,
    RolloutStatus,
)
from osmosis_ai.rollout import _execution as engine
from osmosis_ai.rollout._execution import (
    run_grader_phase,
    run_workflow_phase,
    should_grade,
    validate_reward,
)

ANSWER = [{"role": "assistant", "content": "42"}]


class Answer(AgentWorkflow[AgentWorkflowConfig]):
    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
        return ANSWER


class NoSample(AgentWorkflow[AgentWorkflowConfig]):
    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
        return AgentWorkflowOutput(messages=None, info={"why": "nothing"})


class LabelEcho(Grader):
    """Reward 1.0 iff the label is None (proves the grader runs without one)."""

    async def grade(self, ctx: GraderContext) -> None:
        ctx.set_reward(1.0 if ctx.label is None else 0.5)


class Remove(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        assert ctx.sample is not None
        ctx.sample.remove_sample = True


class NaNReward(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        assert ctx.sample is not None
        object.__setattr__(ctx.sample, "reward", math.nan)  # what unvalidated code can store


class Raises(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        ctx.set_reward(1.0)
        raise RuntimeError("grader blew up")


class Forgets(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        return None


async def _engine(
    workflow: type[AgentWorkflow[Any]], grader: type[Grader], label: str | None
) -> ExecutionOutcome:
    with RolloutContext(chat_completions_url="http://127.0.0.1:9", rollout_id="r") as ctx:
        result = await run_workflow_phase(
            lambda: workflow(None),
            prompt=[],
            metadata=None,
            label=label,
            artifacts_dir=None,
            rollout=ctx,
        )
    if not should_grade(grade=True, has_grader=True, workflow=result):
        return ExecutionOutcome(workflow=result)
    graded = await run_grader_phase(
        lambda: grader(None),
        workflow_sample=result.sample,
        label=label,
        metadata=None,
        artifacts_dir=None,
    )
    return ExecutionOutcome(workflow=result, grader=graded)


async def _local(
    workflow: type[AgentWorkflow[Any]], grader: type[Grader], label: str | None
) -> ExecutionOutcome:
    backend = LocalBackend(workflow=workflow, grader=grader)
    with RolloutContext(chat_completions_url="http://127.0.0.1:9", rollout_id="r"):
        return await backend.execute(ExecutionRequest(id="r", prompt=[], label=label))


def _summary(outcome: ExecutionOutcome) -> tuple[Any, ...]:
    result = outcome.result
    sample = result.sample
    return (
        result.status,
        result.err_category,
        outcome.wire_reward,
        None if sample is None else (sample.reward, sample.remove_sample),
    )


CASES = {
    # name: (workflow, grader, label, (status, category, wire reward, (sample reward, removed)))
    "graded": (Answer, LabelEcho, "42", (RolloutStatus.SUCCESS, None, 0.5, (0.5, False))),
    "missing_label": (Answer, LabelEcho, None, (RolloutStatus.SUCCESS, None, 1.0, (1.0, False))),
    "no_sample": (
        NoSample,
        LabelEcho,
        "42",
        (RolloutStatus.FAILURE, RolloutErrorCategory.VALIDATION_ERROR, None, None),
    ),
    "remove_sample": (Answer, Remove, "42", (RolloutStatus.SUCCESS, None, None, (None, True))),
    "nan_reward": (
        Answer,
        NaNReward,
        "42",
        (RolloutStatus.FAILURE, RolloutErrorCategory.VALIDATION_ERROR, None, (None, False)),
    ),
    "raising_grader": (
        Answer,
        Raises,
        "42",
        (RolloutStatus.FAILURE, RolloutErrorCategory.AGENT_ERROR, None, (None, False)),
    ),
    "no_reward": (
        Answer,
        Forgets,
        "42",
        (RolloutStatus.FAILURE, RolloutErrorCategory.VALIDATION_ERROR, None, (None, False)),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_engine_and_local_backend_agree(case: str) -> None:
    workflow, grader, label, expected = CASES[case]
    assert _summary(await _engine(workflow, grader, label)) == expected
    assert _summary(await _local(workflow, grader, label)) == expected


def test_validate_reward_never_turns_a_missing_sample_into_zero() -> None:
    result = validate_reward(None)
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.VALIDATION_ERROR
    assert result.wire_reward is None
    assert "No sample to grade" in (result.err_message or "")


def test_wire_reward_only_for_a_kept_successful_sample() -> None:
    sample = RolloutSample(messages=ANSWER, reward=1.0)
    assert ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample).wire_reward == 1.0
    assert ExecutionResult(status=RolloutStatus.FAILURE, sample=sample).wire_reward is None
    removed = sample.model_copy(update={"remove_sample": True})
    assert ExecutionResult(status=RolloutStatus.SUCCESS, sample=removed).wire_reward is None
    # A failed workflow whose grader produced a sample: the result is a failure, no reward.
    outcome = ExecutionOutcome(
        workflow=ExecutionResult(status=RolloutStatus.FAILURE, err_message="x"),
        grader=ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample),
    )
    assert outcome.wire_reward is None


async def test_deadline_reports_the_given_message() -> None:
    class Slow(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            await asyncio.Event().wait()

    loop = asyncio.get_running_loop()
    result = await run_workflow_phase(
        lambda: Slow(None),
        prompt=[],
        metadata=None,
        label=None,
        artifacts_dir=None,
        rollout=None,
        deadline=loop.time() + 0.01,
        deadline_message="workflow exceeded its 0.01s deadline",
    )
    assert result.err_category == RolloutErrorCategory.TIMEOUT
    assert result.err_message == "workflow exceeded its 0.01s deadline"


async def test_a_failure_traceback_starts_at_the_rollout_code_and_keeps_its_causes() -> None:
    class Broken(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            try:
                {}["missing"]
            except KeyError as exc:
                raise RuntimeError("the tool answered nothing") from exc

    class BrokenGrader(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            raise ValueError("cannot parse the answer")

    workflow = await run_workflow_phase(
        lambda: Broken(None), prompt=[], metadata=None, label=None, artifacts_dir=None,
        rollout=None,
    )  # fmt: skip
    grader = await run_grader_phase(
        lambda: BrokenGrader(), workflow_sample=RolloutSample(messages=ANSWER), label="42",
        metadata=None, artifacts_dir=None,
    )  # fmt: skip

    for result, last_line in [
        (workflow, "RuntimeError: the tool answered nothing"),
        (grader, "ValueError: cannot parse the answer"),
    ]:
        assert result.extra_fields is not None
        text = result.extra_fields["traceback"]
        assert engine.__file__ not in text, text  # the engine's own frames are left out
        assert text.rstrip().endswith(last_line), text
        frames = [line for line in text.splitlines() if line.lstrip().startswith("File ")]
        assert frames, text
        assert all(__file__ in frame for frame in frames), text  # only the rollout code's
    assert workflow.extra_fields is not None
    assert "KeyError: 'missing'" in workflow.extra_fields["traceback"]  # the cause stays


def test_engine_imports_without_server_or_integrations() -> None:
    """The Harbor sandbox imports the engine with only osmosis-core's own dependencies."""
    code = (
        "import sys, osmosis_ai.rollout._execution\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "{'fastapi', 'uvicorn', 'httpx', 'openai', 'strands', 'agents', 'harbor'}]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("reward", [1.0, 0.0, -2.5, 3, True, "0.5", math.nan, math.inf, None])
def test_set_reward_stores_what_assignment_validation_stores(reward: Any) -> None:
    """set_reward takes a faster path for finite floats; every value ends as assignment does."""
    by_assignment = RolloutSample(messages=[{"role": "user", "content": "q"}])
    by_context = RolloutSample(messages=[{"role": "user", "content": "q"}])
    errors: list[Any] = []
    for set_it in (
        lambda: setattr(by_assignment, "reward", reward),
        lambda: GraderContext(sample=by_context).set_reward(reward),
    ):
        try:
            set_it()
        except ValidationError as exc:
            errors.append(exc.errors())
    assert len(errors) in (0, 2)  # both rejected (with the same errors) or both accepted
    assert errors[:1] == errors[1:]
    assert by_context.model_dump() == by_assignment.model_dump()
    assert type(by_context.reward) is type(by_assignment.reward)
    assert by_context.model_fields_set == by_assignment.model_fields_set
