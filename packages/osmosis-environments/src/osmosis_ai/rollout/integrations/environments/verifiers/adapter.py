"""A verifiers ``Environment`` as an osmosis rollout: ``verifiers:<module>?<arguments>``.

This is the classic API (verifiers before 0.4); with verifiers 0.4 or later installed the same
``verifiers:`` source runs v1 tasksets instead (:mod:`._v1`).

``<module>`` is imported and its ``load_environment(**arguments)`` called, through verifiers'
own ``vf.load_environment`` (arguments typed by that function's annotations). Then:

* rows: the environment's evaluation dataset (``get_eval_dataset()``, which falls back to its
  training dataset): each row's ``prompt`` as ``messages`` and ``answer`` as the label;
* workflow: verifiers' own rollout loop (``env.rollout``: single-turn, multi-turn and tool
  environments alike) with an ``OpenAIChatCompletionsClient`` around the rollout's policy client
  (:attr:`AgentWorkflowContext.policy`); the sample is the conversation in chat-completions form.
  A model call that fails at the policy fails the rollout as an infrastructure error;
* grader: the environment's rubric (``rubric.score_rollout`` on the rollout's state: every reward
  function with its weight); each reward function's score is a per-sample metric.

Group-level reward functions (scored over all samples of a prompt at once) are refused by name.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from osmosis_ai.rollout import (
    AgentWorkflow,
    AgentWorkflowConfig,
    AgentWorkflowContext,
    Grader,
    GraderConfig,
    GraderContext,
)
from osmosis_ai.rollout.integrations.environments import (
    Environment,
    EnvironmentInfo,
    EnvironmentSpec,
    EnvironmentSpecError,
    typed_options,
)
from osmosis_ai.rollout.integrations.spi import (
    share_in_config_copies,
    translate_policy_error,
)

#: Rollout states awaiting their grader, per rollout id (bounded: a rollout run without grading
#: must not keep its state forever).
_STATES: OrderedDict[str, Any] = OrderedDict()
_MAX_PENDING_STATES = 1024


class _Loaded:
    """The live ``vf.Environment``, shared (not deep-copied) between rollouts' configs."""

    def __init__(self, env: Any) -> None:
        self.env = env


share_in_config_copies(_Loaded)


class VerifiersWorkflowConfig(AgentWorkflowConfig):
    loaded: _Loaded


class VerifiersGraderConfig(GraderConfig):
    loaded: _Loaded


class VerifiersWorkflow(AgentWorkflow[VerifiersWorkflowConfig]):
    """verifiers' rollout loop against the rollout's policy."""

    async def run(self, ctx: AgentWorkflowContext[VerifiersWorkflowConfig]) -> list[dict[str, Any]]:
        import verifiers as vf

        assert ctx.config is not None
        env = ctx.config.loaded.env
        policy = ctx.policy
        row = env.get_eval_dataset()[int((ctx.metadata or {})["verifiers_index"])]
        client = vf.OpenAIChatCompletionsClient(policy.client())
        state = await env.rollout(dict(row), client, policy.model, None)
        error = state.get("error")
        for cause in _causes(error):
            translated = translate_policy_error(cause, policy.base_url)
            if translated is not None:
                raise translated from error
        keep_state(policy.rollout_id, state)
        messages, _ = await client.to_native_prompt(
            [*state["prompt"], *(state.get("completion") or [])]
        )
        return [dict(m) for m in messages]


class VerifiersGrader(Grader):
    """The environment's rubric on the rollout's state."""

    async def grade(self, ctx: GraderContext) -> None:
        assert isinstance(self.config, VerifiersGraderConfig)
        assert ctx.sample is not None
        state = take_state()
        rubric = self.config.loaded.env.rubric
        try:
            await rubric.score_rollout(state)
        finally:
            await rubric.cleanup(state)
        ctx.sample.metrics.update({k: float(v) for k, v in (state["metrics"] or {}).items()})
        ctx.set_reward(float(state["reward"]))


def keep_state(rollout_id: str, state: Any) -> None:
    """Keep a rollout's state (or v1 trace) for its grader."""
    _STATES[rollout_id] = state
    while len(_STATES) > _MAX_PENDING_STATES:
        _STATES.popitem(last=False)


def take_state() -> Any:
    """The state :func:`keep_state` kept for the current rollout."""
    from osmosis_ai.rollout.integrations.spi import get_rollout_context

    current = get_rollout_context()
    state = _STATES.pop(current.rollout_id if current else "", None)
    if state is None:
        raise RuntimeError(
            "the verifiers rewards need the rollout's state, which this process did not "
            "produce: grade verifiers rollouts in the process that ran them"
        )
    return state


class VerifiersSource:
    """``SOURCE`` of this adapter: the classic API where the installed verifiers has it
    (before 0.4), else the v1 Taskset/Harness API (:mod:`._v1`)."""

    def load(self, spec: EnvironmentSpec) -> Environment:
        import verifiers as vf

        if not hasattr(vf, "Environment"):
            from ._v1 import load

            return load(spec)
        env = _load(spec)
        rubric = env.rubric
        if rubric.has_group_rewards:
            raise EnvironmentSpecError(
                f"{spec}: its rubric has group-level reward functions (scored over all samples "
                "of a prompt together), which osmosis grades one sample at a time; use "
                "individual reward functions"
            )
        rows = [
            {
                "messages": list(row["prompt"]),
                "ground_truth": _label(row.get("answer")),
                "metadata": {"verifiers_index": index},
            }
            for index, row in enumerate(env.get_eval_dataset())
        ]
        loaded = _Loaded(env)
        name = f"verifiers:{spec.name}"
        return Environment(
            spec=spec,
            workflow=VerifiersWorkflow,
            workflow_config=VerifiersWorkflowConfig(name=name, loaded=loaded),
            grader=VerifiersGrader,
            grader_config=VerifiersGraderConfig(name=name, loaded=loaded),
            rows=rows,
            metrics=tuple(rubric._get_reward_func_names()),
            description=(type(env).__doc__ or type(env).__name__).strip().splitlines()[0],
            needs=("sandbox",) if "Sandbox" in type(env).__name__ else (),
        )

    def list(self) -> Iterator[EnvironmentInfo]:
        """Installed environment packages (distributions whose top-level module defines
        ``load_environment``, verifiers' convention) are not enumerable without importing every
        installed module, so nothing is listed: name the module with ``verifiers:<module>``."""
        return iter(())


def _load(spec: EnvironmentSpec) -> Any:
    import importlib

    import verifiers as vf

    try:
        module = importlib.import_module(spec.name.replace("-", "_").split("/")[-1])
    except ImportError as exc:
        raise EnvironmentSpecError(
            f"{spec}: cannot import the environment module {spec.name!r} ({exc}); install its "
            "package (`vf-install`/`pip install`) or put the module on PYTHONPATH (the current "
            "folder works for osmosis eval run)"
        ) from exc
    loader = getattr(module, "load_environment", None)
    if loader is None:
        raise EnvironmentSpecError(
            f"{spec}: module {module.__name__} has no load_environment(); a v1 vf.Taskset "
            "needs verifiers 0.4 or later (`pip install 'verifiers>=0.4'`)"
        )
    fields = {
        name: (param.annotation if param.annotation is not inspect.Parameter.empty else str)
        for name, param in inspect.signature(loader, eval_str=True).parameters.items()
        if param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY)
    }
    arguments = typed_options(spec, fields, what=f"{module.__name__}.load_environment")
    try:
        env = vf.load_environment(spec.name, **arguments)
    except (RuntimeError, ValueError) as exc:  # verifiers wraps what load_environment raised
        raise EnvironmentSpecError(f"{spec}: {exc}") from exc
    if not isinstance(env, vf.Environment):
        raise EnvironmentSpecError(
            f"{spec}: load_environment returned a {type(env).__module__}.{type(env).__name__}, "
            "not a vf.Environment: return a classic vf.Environment (SingleTurnEnv, MultiTurnEnv, "
            "ToolEnv, ...); v1 tasksets run with verifiers 0.4 or later (docs/guides/verifiers.md)"
        )
    return env


def _label(answer: Any) -> str | None:
    return None if answer in (None, "") else str(answer)


def _causes(error: BaseException | None) -> Iterator[BaseException]:
    while error is not None:
        yield error
        error = error.__cause__ or error.__context__


SOURCE = VerifiersSource()
