"""The one execution engine: run the workflow, derive the sample, run the grader, check the reward.

Every backend runs a rollout's user code through these functions, so the same workflow and
grader give the same outcome in-process (``LocalBackend``) and inside a Harbor sandbox (the
bundle's runner). The module imports only the standard library and core modules that need
nothing beyond pydantic, because the sandbox runner imports it with just ``osmosis-core``
installed.

API (all results are :class:`~osmosis_ai.rollout.types.execution.ExecutionResult`):

``await run_workflow_phase(build_workflow, *, prompt, metadata, label, artifacts_dir, rollout,
deadline=None, deadline_message=...)``
    Builds the workflow (``build_workflow()``, a zero-argument factory, called inside the guard
    so a failing constructor is reported like a failing ``run``), calls ``run`` with an
    :class:`AgentWorkflowContext` and derives the sample with :func:`sample_from_output`.
    ``deadline`` is an absolute event-loop time (``loop.time()`` clock): past it the result is
    a ``timeout`` failure with ``deadline_message``, also when the code swallowed the
    cancellation or blocked the loop past it. A ``TimeoutError`` the code raised itself keeps
    its own message (category ``timeout``). Other exceptions become categorised failures
    (:func:`exception_failure`). Success carries ``extra_fields["workflow_info"]`` when the
    output had ``info``. Success may carry no sample: grading then reports it.

``await sample_from_output(output, *, label, rollout)``
    An explicit output with ``messages`` becomes ``RolloutSample(messages, label, metrics)``;
    ``None`` asks ``rollout``'s registered sample source, whose sample gets ``label`` when it
    has none; an output with ``messages=None`` means "no sample".

``should_grade(*, grade, has_grader, workflow)``
    The grader runs when grading was asked for, a grader exists and the workflow succeeded.
    A missing label does not skip it (the grader sees ``label=None``).

``await run_grader_phase(build_grader, *, workflow_sample, label, metadata, artifacts_dir,
timeout=None)``
    Grades a copy of the workflow's sample (the workflow result stays ungraded), then applies
    :func:`validate_reward`. A raising grader is a categorised failure whose sample is kept with
    ``reward=None``; past ``timeout`` seconds it is ``timeout``
    (``"grader exceeded its Ns deadline"``), also when the grader swallowed the cancellation or
    blocked the loop past it (its late reward is cleared). LLM-judge calls made while grading
    (:mod:`osmosis_ai.judge_usage`) are added to the sample's metrics as ``judge_*``, apart from
    the policy's usage, whatever the outcome; a judge that failed makes a ``judge_error``.

``validate_reward(sample, extra=None)``
    The one definition of a reward. No sample: ``validation_error`` (never reward 0). A finite
    reward, or ``remove_sample=True`` (with or without a reward): ``success``. No reward and not
    removed: ``validation_error``. A non-finite reward (which only code bypassing pydantic's
    validation can store): ``validation_error`` with the reward cleared.

``failure(category, message, sample=None, extra=None)`` and ``exception_failure(exc, phase,
sample=None)`` build failure results; ``seconds(x)`` formats a budget as in the messages.

What the controller finally sees as the reward is ``ExecutionOutcome.wire_reward`` (in
:mod:`osmosis_ai.rollout.types.execution`), never recomputed elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from osmosis_ai._util.tracebacks import traceback_from
from osmosis_ai.judge_usage import collect_judge_usage, judge_metrics
from osmosis_ai.rollout.agent_workflow import coerce_output
from osmosis_ai.rollout.context import AgentWorkflowContext, GraderContext
from osmosis_ai.rollout.errors import categorize_exception, describe_exception
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionResult
from osmosis_ai.rollout.types.sample import RolloutSample

if TYPE_CHECKING:
    from osmosis_ai.rollout.agent_workflow import AgentWorkflow
    from osmosis_ai.rollout.context import RolloutContext
    from osmosis_ai.rollout.grader import Grader
    from osmosis_ai.rollout.types.output import AgentWorkflowOutput

__all__ = [
    "exception_failure",
    "failure",
    "run_grader_phase",
    "run_workflow_phase",
    "sample_from_output",
    "seconds",
    "should_grade",
    "validate_reward",
]

_SUCCESS = RolloutStatus.SUCCESS
_FAILURE = RolloutStatus.FAILURE
_TIMEOUT = RolloutErrorCategory.TIMEOUT
_VALIDATION = RolloutErrorCategory.VALIDATION_ERROR
# The scope of a phase without a deadline: asyncio.timeout(None) never fires, but entering one
# costs a Timeout object and a task lookup per phase (twice per rollout).
_UNBOUNDED = contextlib.nullcontext()

NO_SAMPLE_MESSAGE = (
    "No sample to grade: the workflow returned no messages and registered no sample "
    "source; return an AgentWorkflowOutput or a message list from run()"
)
NO_REWARD_MESSAGE = (
    "Sample has no reward after grading: the grader must call ctx.set_reward(x) "
    "with a finite number (or set ctx.sample.remove_sample = True)"
)


def seconds(value: float) -> str:
    """A budget as the deadline messages print it (``5``, ``0.1``)."""
    return f"{value:g}"


def failure(
    category: RolloutErrorCategory,
    message: str,
    sample: RolloutSample | None = None,
    extra: dict[str, Any] | None = None,
) -> ExecutionResult:
    return ExecutionResult(
        status=_FAILURE,
        sample=sample,
        err_message=message,
        err_category=category,
        extra_fields=extra,
    )


def exception_failure(
    exc: BaseException, phase: str, sample: RolloutSample | None = None
) -> ExecutionResult:
    """A failure for an exception raised by rollout code in ``phase`` (workflow or grader).

    The formatted traceback (last 8,000 characters) goes to the diagnostics saved next to the
    trajectory (never on the wire), so that ``osmosis eval show`` and the report can say where.
    """
    return failure(
        categorize_exception(exc),
        describe_exception(exc),
        sample,
        {
            "failed_phase": phase,
            "exception_type": type(exc).__name__,
            # From the rollout code's first frame: this module's frames say nothing.
            "traceback": traceback_from(exc, lambda path: path != __file__)[-8000:],
        },
    )


async def sample_from_output(
    output: AgentWorkflowOutput | None,
    *,
    label: str | None,
    rollout: RolloutContext | None,
) -> RolloutSample | None:
    if output is None:
        if rollout is None:
            return None
        sample = await rollout.get_sample()
        if sample is not None and sample.label is None and label is not None:
            sample.label = label
        return _with_tool_errors(sample, rollout)
    if output.messages is None:
        return None
    return _with_tool_errors(
        RolloutSample._from_output(output.messages, label, output.metrics), rollout
    )


def _with_tool_errors(
    sample: RolloutSample | None, rollout: RolloutContext | None
) -> RolloutSample | None:
    """``sample`` with the tool errors recorded during the rollout (``record_tool_error``)
    under ``extra_fields["tool_errors"]``."""
    if sample is not None and rollout is not None and rollout.tool_errors:
        sample.extra_fields = {
            **sample.extra_fields,
            "tool_errors": [dict(e) for e in rollout.tool_errors],
        }
    return sample


async def _call_workflow(
    build_workflow: Callable[[], AgentWorkflow[Any]],
    prompt: list[dict[str, Any]],
    metadata: dict[str, Any] | None,
    artifacts_dir: Path | None,
) -> AgentWorkflowOutput | None:
    workflow = build_workflow()
    workflow_ctx: AgentWorkflowContext[Any] = AgentWorkflowContext(
        prompt=prompt, config=workflow.config, metadata=metadata, artifacts_dir=artifacts_dir
    )
    returned: Any = workflow.run(workflow_ctx)
    if inspect.isawaitable(returned):
        returned = await returned
    return coerce_output(returned)


async def run_workflow_phase(
    build_workflow: Callable[[], AgentWorkflow[Any]],
    *,
    prompt: list[dict[str, Any]],
    metadata: dict[str, Any] | None,
    label: str | None,
    artifacts_dir: Path | None,
    rollout: RolloutContext | None,
    deadline: float | None = None,
    deadline_message: str = "workflow exceeded its deadline",
) -> ExecutionResult:
    """Run the workflow and derive its sample; see the module docstring."""
    loop = asyncio.get_running_loop()
    if deadline is not None and loop.time() >= deadline:
        return failure(_TIMEOUT, deadline_message)
    sample: RolloutSample | None = None
    output: AgentWorkflowOutput | None = None
    scope = asyncio.timeout_at(deadline) if deadline is not None else None
    try:
        async with scope or _UNBOUNDED:
            output = await _call_workflow(build_workflow, prompt, metadata, artifacts_dir)
            sample = await sample_from_output(output, label=label, rollout=rollout)
    except TimeoutError as exc:
        if scope is not None and scope.expired():
            return failure(_TIMEOUT, deadline_message)
        return exception_failure(exc, "workflow")
    except Exception as exc:
        return exception_failure(exc, "workflow")
    if deadline is not None and loop.time() >= deadline:
        # The workflow swallowed the cancellation or blocked the loop past its deadline.
        return failure(_TIMEOUT, deadline_message, sample)
    extra = {"workflow_info": output.info} if output is not None and output.info else None
    return ExecutionResult(status=_SUCCESS, sample=sample, extra_fields=extra)


def should_grade(*, grade: bool, has_grader: bool, workflow: ExecutionResult) -> bool:
    return grade and has_grader and workflow.status is _SUCCESS


def validate_reward(
    sample: RolloutSample | None, extra: dict[str, Any] | None = None
) -> ExecutionResult:
    """The graded result for ``sample``: the one definition of a valid reward."""
    if sample is None:
        return failure(_VALIDATION, NO_SAMPLE_MESSAGE, None, extra)
    reward = sample.reward
    if reward is None:
        if sample.remove_sample:
            return ExecutionResult(status=_SUCCESS, sample=sample, extra_fields=extra)
        return failure(_VALIDATION, NO_REWARD_MESSAGE, sample, extra)
    if not math.isfinite(reward):
        object.__setattr__(sample, "reward", None)  # bypass validation: clearing, not setting
        return failure(
            _VALIDATION, f"grader produced a non-finite reward ({reward})", sample, extra
        )
    return ExecutionResult(status=_SUCCESS, sample=sample, extra_fields=extra)


def _clear_reward(sample: RolloutSample | None) -> None:
    if sample is not None and sample.reward is not None:
        object.__setattr__(sample, "reward", None)


async def _call_grader(build_grader: Callable[[], Grader], grader_ctx: GraderContext) -> None:
    returned: Any = build_grader().grade(grader_ctx)
    if inspect.isawaitable(returned):
        await returned


async def run_grader_phase(
    build_grader: Callable[[], Grader],
    *,
    workflow_sample: RolloutSample | None,
    label: str | None,
    metadata: dict[str, Any] | None,
    artifacts_dir: Path | None,
    timeout: float | None = None,  # noqa: ASYNC109 - the grader's budget is the API
) -> ExecutionResult:
    """Grade a copy of ``workflow_sample`` and validate the reward; see the module docstring."""
    with collect_judge_usage() as judge_usage:
        result = await _grade_copy(
            build_grader,
            workflow_sample=workflow_sample,
            label=label,
            metadata=metadata,
            artifacts_dir=artifacts_dir,
            timeout=timeout,
        )
    if judge_usage.calls and result.sample is not None:
        # A new dict: the graded copy shares its metrics dict with the workflow's sample.
        result.sample.metrics = {**result.sample.metrics, **judge_metrics(judge_usage)}
    return result


async def _grade_copy(
    build_grader: Callable[[], Grader],
    *,
    workflow_sample: RolloutSample | None,
    label: str | None,
    metadata: dict[str, Any] | None,
    artifacts_dir: Path | None,
    timeout: float | None,  # noqa: ASYNC109 - the grader's budget is the API
) -> ExecutionResult:
    sample = workflow_sample.model_copy() if workflow_sample is not None else None
    grader_ctx = GraderContext(
        label=label, sample=sample, metadata=metadata, artifacts_dir=artifacts_dir
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout if timeout is not None else None
    scope = asyncio.timeout_at(deadline) if deadline is not None else None
    try:
        async with scope or _UNBOUNDED:
            await _call_grader(build_grader, grader_ctx)
    except TimeoutError as exc:
        _clear_reward(sample)
        if timeout is not None and scope is not None and scope.expired():
            return failure(_TIMEOUT, f"grader exceeded its {seconds(timeout)}s deadline", sample)
        return exception_failure(exc, "grader", sample)
    except Exception as exc:
        _clear_reward(sample)
        return exception_failure(exc, "grader", sample)
    if timeout is not None and deadline is not None and loop.time() >= deadline:
        # The grader swallowed the cancellation or blocked the loop past its deadline: a reward
        # set late is not a reward (0.3.8 reports it the same way).
        _clear_reward(sample)
        return failure(_TIMEOUT, f"grader exceeded its {seconds(timeout)}s deadline", sample)
    return validate_reward(sample)
