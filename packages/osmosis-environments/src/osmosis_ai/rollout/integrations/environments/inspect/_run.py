"""The Inspect task's solver chain as an ``AgentWorkflow`` and its scorers as a ``Grader``.

Both call Inspect: the task is loaded by Inspect's loader, the solver chain runs with Inspect's
``generate`` loop (tool calls executed by Inspect) against an Inspect ``openai/...`` model bound
to the active rollout's policy endpoint, and each scorer is Inspect's own, its value mapped by
Inspect's ``value_to_float``. The workflow's sample keeps Inspect's messages (``messages``), a
chat-completions copy (``trajectory_messages``) and the final ``ModelOutput`` and ``Store``
(``extra_fields``), which the grader turns back into the ``TaskState`` the scorers read.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from osmosis_ai.rollout import AgentWorkflow, Grader
from osmosis_ai.rollout.integrations.environments import EnvironmentSpecError
from osmosis_ai.rollout.integrations.spi import (
    RolloutSample,
    SampleSource,
    require_active_rollout,
    translate_policy_error,
)
from osmosis_ai.rollout.types.config import AgentWorkflowConfig, GraderConfig

if TYPE_CHECKING:
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessage
    from inspect_ai.scorer import Score
    from inspect_ai.solver import TaskState

    from osmosis_ai.rollout.context import AgentWorkflowContext, GraderContext

#: Inspect's provider for any OpenAI-compatible chat-completions server (``system`` role, no
#: Responses API), with ``osmosis`` as its service name.
PROVIDER = "openai-api/osmosis"
_OUTPUT, _STORE, _STATE_METADATA = "inspect_output", "inspect_store", "inspect_metadata"
#: A sandboxed task's scores, taken by its scorers while the sample's sandbox was alive.
_SCORES = "inspect_scores"


class _TaskFields(BaseModel):
    task: str = Field(description="Inspect task spec: 'file.py@task' or a registered name")
    task_args: dict[str, str] = Field(default_factory=dict)
    model_name: str = "osmosis-rollout"

    @property
    def task_arg_values(self) -> str:
        """The task arguments as Inspect's ``-T KEY=VALUE`` parser reads them (JSON, hashable)."""
        return json.dumps(sorted(self.task_args.items()))

    def scorer_names(self, task: Task) -> list[str]:
        from inspect_ai.scorer._scorer import unique_scorer_name

        names: list[str] = []
        for scorer in task.scorer or []:
            names.append(unique_scorer_name(scorer, names))
        return names


class InspectTaskConfig(AgentWorkflowConfig, _TaskFields):
    """Which Inspect task a rollout runs (``task``, its ``task_args``) and the model name sent."""

    def for_grader(self) -> InspectScorerConfig:
        return InspectScorerConfig(**self.model_dump(exclude={"concurrency"}))


class InspectScorerConfig(GraderConfig, _TaskFields):
    """The same task, for the grader (its scorers)."""


@functools.lru_cache(maxsize=16)
def load_task(task: str, task_args_json: str) -> Task:
    """The Inspect ``Task`` (loaded once per process by Inspect's own loader)."""
    from inspect_ai._eval.loader import load_tasks
    from inspect_ai._util.config import parse_cli_args

    args = parse_cli_args([f"{key}={value}" for key, value in json.loads(task_args_json)])
    try:
        tasks = load_tasks([task], args)
    except Exception as exc:
        raise EnvironmentSpecError(
            f"Inspect could not load task {task!r}: {exc}. Name it as 'inspect:FILE.py@TASK' "
            "(the task function's name) or a registered task such as 'inspect_evals/gsm8k'."
        ) from exc
    if len(tasks) != 1:
        found = ", ".join(t.name for t in tasks) or "none"
        raise EnvironmentSpecError(
            f"Inspect task spec {task!r} names {len(tasks)} tasks ({found}); pick one with "
            "'FILE.py@TASK'."
        )
    return tasks[0]


def _sample(metadata: dict[str, Any] | None) -> Sample:
    from inspect_ai.dataset import Sample

    raw = (metadata or {}).get("inspect_sample")
    if not isinstance(raw, dict):
        raise EnvironmentSpecError(
            "This row has no metadata['inspect_sample']: rows for an Inspect task come from the "
            "task's dataset (load them with load_environment('inspect:...').rows)."
        )
    return Sample.model_validate(raw)


def _config(value: Any) -> _TaskFields:
    if not isinstance(value, _TaskFields):
        raise EnvironmentSpecError(
            "InspectWorkflow/InspectGrader need the config from load_environment('inspect:...')."
        )
    return value


def _state(
    task: Task, sample: Sample, model: str, messages: list[ChatMessage] | None = None
) -> TaskState:
    from inspect_ai._eval.task.util import sample_messages
    from inspect_ai.model._model import ModelName
    from inspect_ai.scorer import Target
    from inspect_ai.solver import TaskState

    return TaskState(
        model=ModelName(f"{PROVIDER}/{model}"),
        sample_id=sample.id if sample.id is not None else 0,
        epoch=1,
        input=sample.input,
        target=Target(sample.target),
        choices=sample.choices,
        messages=messages if messages is not None else sample_messages(sample),
        message_limit=task.message_limit,
        token_limit=task.token_limit,
        metadata=dict(sample.metadata or {}),
    )


@contextlib.asynccontextmanager
async def _sample_scope(
    task: Task, sample: Sample, model: str, rollout_id: str
) -> AsyncIterator[TaskState]:
    """What Inspect's sample runner sets up around a solver chain (the sample's transcript,
    store, state and active sample), without its eval log; yields the sample's ``TaskState``."""
    from inspect_ai.log._samples import active_sample
    from inspect_ai.log._transcript import Transcript, init_transcript
    from inspect_ai.model._assistant_internal import init_sample_assistant_internal
    from inspect_ai.model._model import init_sample_model_data
    from inspect_ai.solver._task_state import set_sample_state
    from inspect_ai.util._store import init_subtask_store

    state = _state(task, sample, model)
    init_sample_model_data()
    set_sample_state(state)
    transcript = Transcript()
    init_transcript(transcript)
    init_subtask_store(state.store)
    init_sample_assistant_internal()
    async with active_sample(
        task=task.name,
        log_location="",
        model=str(state.model),
        sample=sample,
        epoch=state.epoch,
        message_limit=state.message_limit,
        token_limit=state.token_limit,
        cost_limit=None,
        time_limit=None,
        working_limit=None,
        fails_on_error=True,
        transcript=transcript,
        eval_id=rollout_id or "osmosis",
        sample_uuid=state.uuid,
    ):
        yield state


def _raise_policy_error(exc: BaseException, url: str) -> None:
    """A failed policy call (under Inspect's retry wrapper) as osmosis's policy error."""
    cause: BaseException | None = exc
    while cause is not None:
        last_attempt = getattr(cause, "last_attempt", None)  # tenacity.RetryError
        if last_attempt is not None and last_attempt.failed:
            cause = last_attempt.exception()
            continue
        translated = translate_policy_error(cause, url)
        if translated is not None:
            raise translated from exc
        cause = cause.__cause__


def _sandbox_scope(task: Task, sample: Sample) -> contextlib.AbstractAsyncContextManager[Any]:
    """The sample's sandbox (Harbor's local sandbox, see ``_sandbox``) as Inspect's own
    ``sandboxenv_context`` sets it up (files, setup, cleanup); nothing for a task without one."""
    from inspect_ai._eval.task.sandbox import sandboxenv_context

    from ._sandbox import task_sandbox

    spec = task_sandbox(task)
    if spec is None and sample.sandbox is None:
        return contextlib.nullcontext()
    return sandboxenv_context(task.name, spec, None, True, sample)


async def _run_scorers(
    task: Task, names: list[str], state: TaskState, sample: Sample
) -> list[tuple[str, Score]]:
    from inspect_ai.scorer import Target

    scores: list[tuple[str, Score]] = []
    for name, scorer in zip(names, task.scorer or [], strict=True):
        score = await scorer(state, Target(sample.target))
        if score is None:
            raise ValueError(f"Inspect scorer {name!r} returned no score for this sample")
        scores.append((name, score))
    return scores


async def _scores_in_sandbox(
    task: Task, names: list[str], state: TaskState, sample: Sample
) -> dict[str, Any]:
    """The scores of a sandboxed sample, taken before its sandbox goes (as Inspect scores); a
    scorer's error is kept for the grader to raise, so it fails the grading, as without a
    sandbox, rather than the workflow."""
    state.completed = True
    try:
        scores = await _run_scorers(task, names, state, sample)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"scores": [[name, score.model_dump(mode="json")] for name, score in scores]}


class _Prepared(SampleSource):
    def __init__(self, sample: RolloutSample) -> None:
        self._sample = sample

    async def get_sample(self) -> RolloutSample:
        return self._sample


class InspectWorkflow(AgentWorkflow[InspectTaskConfig]):
    """Runs the Inspect task's solver chain for one sample against the rollout's policy."""

    async def run(self, ctx: AgentWorkflowContext[InspectTaskConfig]) -> None:
        from inspect_ai._eval.task.generate import task_generate
        from inspect_ai._eval.task.run import resolve_plan
        from inspect_ai._util.notgiven import NOT_GIVEN
        from inspect_ai.model import GenerateConfig, get_model, messages_to_openai
        from inspect_ai.model._model import init_active_model
        from inspect_ai.util import LimitExceededError

        from ._sandbox import sample_sandbox

        config = _config(self.config)
        task = load_task(config.task, config.task_arg_values)
        sample = sample_sandbox(task, _sample(ctx.metadata))
        sandbox = _sandbox_scope(task, sample)
        sandboxed = not isinstance(sandbox, contextlib.nullcontext)
        scores: dict[str, Any] | None = None
        rollout = require_active_rollout("The Inspect task's model")
        generate_config = task.config.merge(GenerateConfig(max_retries=0))
        model = get_model(
            f"{PROVIDER}/{config.model_name}",
            base_url=rollout.chat_completions_url,
            api_key=rollout.api_key or "EMPTY",
            config=generate_config,
            memoize=False,
            max_retries=0,  # the openai client's: the trainer's endpoint logs every request
        )
        async with (
            model,
            _sample_scope(task, sample, config.model_name, rollout.rollout_id) as state,
            sandbox,
        ):
            init_active_model(model, generate_config)

            async def generate(
                state: TaskState,
                tool_calls: Literal["loop", "single", "none"] = "loop",
                **kwargs: Any,
            ) -> TaskState:
                return await task_generate(
                    model=model,
                    state=state,
                    tool_calls=tool_calls,
                    cache=kwargs.pop("cache", False) or NOT_GIVEN,
                    config=generate_config.merge(GenerateConfig(**kwargs)),
                )

            limit: str | None = None
            try:
                with state._token_limit, state._message_limit:  # the task's limits, as Inspect
                    state = await resolve_plan(task, None)(state, generate)
            except LimitExceededError as exc:  # Inspect scores a sample that hit its limit
                limit = exc.type
            except Exception as exc:
                _raise_policy_error(exc, rollout.chat_completions_url)
                raise
            finally:
                if task.cleanup is not None:  # the task's per-sample cleanup, as Inspect runs it
                    await task.cleanup(state)
            if sandboxed:
                scores = await _scores_in_sandbox(task, config.scorer_names(task), state, sample)
        native = [m.model_dump(mode="json", exclude_none=True) for m in state.messages]
        sample_out = RolloutSample(
            messages=native,
            trajectory_messages=[dict(m) for m in await messages_to_openai(state.messages)],
            metrics={"inspect_limit_hit": 1.0 if limit else 0.0},
            extra_fields={
                _OUTPUT: state.output.model_dump(mode="json", exclude_none=True),
                _STORE: dict(state.store.items()),
                _STATE_METADATA: state.metadata,
                **({_SCORES: scores} if scores is not None else {}),
            },
        )
        rollout.set_sample_source(_Prepared(sample_out))


class InspectGrader(Grader):
    """Runs the Inspect task's scorers; every scorer a metric, the first one the reward. A
    sandboxed task's scorers ran in the workflow while its sandbox was alive (as Inspect scores
    a sample before its sandbox is cleaned up): their scores are mapped here the same way."""

    async def grade(self, ctx: GraderContext) -> None:
        from inspect_ai.scorer import Score, value_to_float

        config = _config(self.config)
        task = load_task(config.task, config.task_arg_values)
        if ctx.sample is None:
            raise ValueError("InspectGrader: the rollout produced no sample to score")
        taken = ctx.sample.extra_fields.get(_SCORES)
        if isinstance(taken, dict):
            if "error" in taken:
                raise RuntimeError(f"An Inspect scorer failed in the sandbox: {taken['error']}")
            scores = [(name, Score.model_validate(score)) for name, score in taken["scores"]]
        else:
            state, sample = self._state(ctx, task, config)
            scores = await _run_scorers(task, config.scorer_names(task), state, sample)
        to_float = value_to_float()
        rewards: list[float] = []
        for name, score in scores:
            if isinstance(score.value, dict):
                items = score.value.items()
                values = {f"{name}.{k}": to_float(v) for k, v in items if v is not None}
                ctx.sample.metrics.update(values)
                rewards.append(sum(values.values()) / len(values) if values else 0.0)
            else:
                rewards.append(to_float(score.value))
                ctx.sample.metrics[name] = rewards[-1]
        if not rewards:
            raise ValueError(f"Inspect task {config.task!r} has no scorer to grade with")
        ctx.set_reward(rewards[0])

    @staticmethod
    def _state(ctx: GraderContext, task: Task, config: _TaskFields) -> tuple[TaskState, Sample]:
        """The ``TaskState`` the scorers read, rebuilt from the workflow's sample."""
        from inspect_ai.model import ChatMessage, ModelOutput
        from pydantic import TypeAdapter

        assert ctx.sample is not None
        sample = _sample(ctx.metadata)
        messages = TypeAdapter(list[ChatMessage]).validate_python(list(ctx.sample.messages))
        state = _state(task, sample, config.model_name, messages)
        extra = ctx.sample.extra_fields
        state.output = ModelOutput.model_validate(extra.get(_OUTPUT) or {})
        state.metadata = dict(extra.get(_STATE_METADATA) or state.metadata)
        for key, value in (extra.get(_STORE) or {}).items():
            state.store.set(key, value)
        state.completed = True
        return state, sample
