"""verifiers' v1 Taskset/Harness API (verifiers 0.4+, where ``vf.Environment`` is gone).

``verifiers:<taskset id>?<taskset options>&harness=<harness id>``: the taskset is what verifiers'
own loader finds for the id (a module exporting its ``vf.Taskset`` subclass in ``__all__``), the
options are fields of its ``TasksetConfig``, the harness defaults to the taskset's own (verifiers'
rule: the one it exports, else ``bash``). Then:

* rows: the taskset's tasks (``load()`` order): each ``TaskData``'s system prompt and prompt as
  ``messages``, its ``answer`` field (when it has one) as the label;
* workflow: one verifiers episode (``Env.run_episode``) on the local subprocess runtime: the
  harness program, the task's tool servers and verifiers' interception server run as verifiers
  runs them, with the model client pointed at the rollout's policy; the sample is the trace's
  conversation in chat-completions form. A model call the policy refused fails the rollout as an
  infrastructure error;
* grader: the rewards and metrics verifiers recorded while scoring the episode (every ``@reward``
  and judge with its weight, every ``@metric``); each is a per-sample metric, the reward is their
  weighted sum (``Trace.reward``).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
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
    EnvironmentSpec,
    EnvironmentSpecError,
    typed_options,
)
from osmosis_ai.rollout.integrations.spi import (
    PolicyHTTPError,
    mask_url,
    share_in_config_copies,
)

from .adapter import keep_state, take_state


class _Loaded:
    """The live ``vf.Env`` and its tasks, shared between rollouts' configs; verifiers' serving
    resources (interception server, shared tool servers) are up while any rollout runs."""

    def __init__(self, env: Any, tasks: list[Any]) -> None:
        self.env = env
        self.tasks = tasks
        self._users = 0
        self._stack: AsyncExitStack | None = None
        self._lock: asyncio.Lock | None = None

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if self._users == 0:
                stack = AsyncExitStack()
                await stack.enter_async_context(self.env.serving())
                self._stack = stack
            self._users += 1
        try:
            yield
        finally:
            async with self._lock:
                self._users -= 1
                if self._users == 0 and self._stack is not None:
                    stack, self._stack = self._stack, None
                    await stack.aclose()


share_in_config_copies(_Loaded)


class VerifiersV1WorkflowConfig(AgentWorkflowConfig):
    loaded: _Loaded


class VerifiersV1GraderConfig(GraderConfig):
    loaded: _Loaded


class VerifiersV1Workflow(AgentWorkflow[VerifiersV1WorkflowConfig]):
    """One verifiers episode against the rollout's policy."""

    async def run(
        self, ctx: AgentWorkflowContext[VerifiersV1WorkflowConfig]
    ) -> list[dict[str, Any]]:
        import verifiers.v1 as vf
        from verifiers.v1.dialects.chat import message_to_wire

        assert ctx.config is not None
        loaded = ctx.config.loaded
        policy = ctx.policy
        task = loaded.tasks[int((ctx.metadata or {})["verifiers_index"])]
        client = vf.EvalClientConfig(
            base_url=policy.base_url, api_key_var=_key_variable(policy.api_key)
        )
        async with loaded.serving():
            episode = await loaded.env.run_episode(
                task, vf.ModelContext(model=policy.model, client=client)
            )
        errors = [*episode.errors, *(e for trace in episode.traces for e in trace.errors)]
        for error in errors:
            if error.type == "ProviderError":
                raise PolicyHTTPError(error.status_code, error.message, mask_url(policy.base_url))
        if not episode.ok or not episode.traces:
            detail = "; ".join(f"{e.type}: {e.message}" for e in errors) or "no trace"
            raise RuntimeError(f"the verifiers episode failed ({detail})")
        trace = episode.traces[-1]
        keep_state(policy.rollout_id, trace)
        return [message_to_wire(message) for message in trace.messages]


class VerifiersV1Grader(Grader):
    """The rewards and metrics verifiers scored on the episode's trace."""

    async def grade(self, ctx: GraderContext) -> None:
        assert ctx.sample is not None
        trace = take_state()
        rewards = {name: r.score for name, r in trace.rewards.items() if r is not None}
        metrics = {name: v for name, v in trace.metrics.items() if v is not None}
        ctx.sample.metrics.update({k: float(v) for k, v in (rewards | metrics).items()})
        ctx.set_reward(float(trace.reward))


def load(spec: EnvironmentSpec) -> Environment:
    """``spec`` as a v1 taskset on the installed verifiers."""
    from importlib.metadata import version

    import verifiers.v1 as vf

    options = dict(spec.options)
    harness = options.pop("harness", "")
    try:
        config_type = vf.taskset_config_type(spec.name)
        env_class = vf.environment_class(spec.name)
    except (ModuleNotFoundError, AttributeError, TypeError, ValueError) as exc:
        raise EnvironmentSpecError(
            f"{spec}: no verifiers taskset {spec.name!r} ({exc}). The installed verifiers "
            f"{version('verifiers')} has only the v1 Taskset/Harness API: name a module exporting its "
            "vf.Taskset subclass in __all__ (a classic load_environment() module needs "
            "`pip install 'verifiers<0.4'`)"
        ) from exc
    if env_class is not vf.SingleAgentEnv:
        raise EnvironmentSpecError(
            f"{spec}: the taskset brings its own Env ({env_class.__name__}); osmosis runs "
            "single-agent tasksets only (one policy per rollout)"
        )
    fields = {
        name: field.annotation
        for name, field in config_type.model_fields.items()
        if name not in ("id", "task", "system_prompt")
    }
    options = typed_options(
        EnvironmentSpec(spec.source, spec.name, options),
        {**fields, "harness": str},
        what=f"the taskset {spec.name!r} (its TasksetConfig fields, and harness)",
    )
    agent: dict[str, Any] = {"runtime": {"type": "subprocess"}}
    if harness:
        agent["harness"] = {"id": harness}
    try:
        env = vf.load_environment(
            vf.SingleAgentEnvConfig.model_validate(
                {"taskset": {"id": spec.name, **options}, "agent": agent}
            )
        )
    except (ValueError, TypeError, ModuleNotFoundError) as exc:  # pydantic's errors included
        raise EnvironmentSpecError(f"{spec}: {exc}") from exc
    program = vf.load_harness(env.config.agent.harness or vf.default_agent_harness(spec.name))
    if program.NEEDS_CONTAINER:
        raise EnvironmentSpecError(
            f"{spec}: harness {program.config.id!r} runs in a container runtime, which osmosis "
            "does not provide for verifiers; pick a local harness (harness=null for a chat "
            "loop with the task's tools, harness=bash)"
        )
    if not getattr(env.taskset, "bounded", True):  # (typed against the locked verifiers 0.3)
        raise EnvironmentSpecError(f"{spec}: the taskset is infinite; osmosis needs its rows")
    tasks = list(env.taskset)
    loaded = _Loaded(env, tasks)
    name = f"verifiers:{spec.name}"
    hooks = (
        [fn.__name__ for kind in ("reward", "metric") for fn in tasks[0].hooks(kind)]
        if tasks
        else []
    )
    judges = [judge.reward_name for judge in tasks[0].plugged_judges()] if tasks else []
    return Environment(
        spec=spec,
        workflow=VerifiersV1Workflow,
        workflow_config=VerifiersV1WorkflowConfig(name=name, loaded=loaded),
        grader=VerifiersV1Grader,
        grader_config=VerifiersV1GraderConfig(name=name, loaded=loaded),
        rows=_rows(tasks),
        metrics=tuple(hooks + judges),
        description=(type(env.taskset).__doc__ or type(env.taskset).__name__)
        .strip()
        .splitlines()[0],
        needs=("network", "sandbox") if program.EXECUTES_CODE else ("network",),
    )


def _rows(tasks: list[Any]) -> list[dict[str, Any]]:
    """One dataset row per task: its system prompt and prompt as chat messages, its ``answer``
    (if any) as the label, its index to find the task again."""
    from verifiers.v1.dialects.chat import message_to_wire

    rows = []
    for index, task in enumerate(tasks):
        data = task.data
        prompt = data.prompt or []
        messages = [{"role": "system", "content": data.system_prompt}] if data.system_prompt else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:
            messages.extend(message_to_wire(m) for m in prompt)
        answer = getattr(data, "answer", None)
        rows.append(
            {
                "messages": messages,
                "ground_truth": None if answer in (None, "") else str(answer),
                "metadata": {"verifiers_index": index},
            }
        )
    return rows


def _key_variable(api_key: str) -> str:
    """verifiers reads the model's API key from an environment variable: one per key, named by
    its digest (the subprocess runtime drops every ``*API_KEY*`` variable from the harness's
    environment, so the key stays in this process)."""
    name = "OSMOSIS_VERIFIERS_API_KEY_" + hashlib.sha256(api_key.encode()).hexdigest()[:12]
    os.environ.setdefault(name, api_key)
    return name
