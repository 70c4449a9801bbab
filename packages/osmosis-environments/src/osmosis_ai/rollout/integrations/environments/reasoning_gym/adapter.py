"""Reasoning Gym generators as osmosis rollouts: ``reasoning-gym:<generator>?<config>&seed=N``.

* rows: the generator's entries (``reasoning_gym.create_dataset(name, **config)``) with its
  ``question`` as the user prompt, Reasoning Gym's own system prompt (option ``system_prompt``, a
  key of ``reasoning_gym.utils.SYSTEM_PROMPTS``, default ``default``) and ``answer`` as the label;
* workflow: one policy call (:attr:`AgentWorkflowContext.policy`), the reply appended;
* grader: ``reasoning_gym.utils.extract_answer`` on the reply, then the dataset's own
  ``score_answer`` against the entry regenerated from the same config, seed and index (so no
  JSON round trip of the entry's metadata can change the score). Metrics: ``score`` (the reward)
  and ``answered`` (1 when the reply had an ``<answer>`` tag).

Options are the generator's config dataclass fields, typed by its annotations.
Fully offline: Reasoning Gym generates and scores locally.
"""

from __future__ import annotations

import dataclasses
import typing
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
from osmosis_ai.rollout.integrations.spi import share_in_config_copies, translating_policy_errors

ADAPTER_OPTIONS = {"system_prompt": str}
METRICS = ("score", "answered")


class _Generator:
    """The live dataset object, shared (not deep-copied) between rollouts' configs."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset


share_in_config_copies(_Generator)


class ReasoningGymGraderConfig(GraderConfig):
    generator: _Generator


def _registry() -> dict[str, tuple[type, type]]:
    import reasoning_gym  # noqa: F401  (registers every generator)
    from reasoning_gym.factory import DATASETS

    return DATASETS


class ReasoningGymWorkflow(AgentWorkflow[AgentWorkflowConfig]):
    """Ask the policy once; the sample is the prompt plus its reply."""

    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> list[dict[str, Any]]:
        policy = ctx.policy
        with translating_policy_errors(policy.base_url):
            reply = await policy.client().chat.completions.create(
                model=policy.model,
                messages=ctx.prompt,  # pyright: ignore[reportArgumentType]
            )
        message = reply.choices[0].message
        return [*ctx.prompt, {"role": "assistant", "content": message.content or ""}]


class ReasoningGymGrader(Grader):
    """The generator's own ``score_answer`` on the ``<answer>`` of the last reply."""

    async def grade(self, ctx: GraderContext) -> None:
        from reasoning_gym.utils import extract_answer

        assert isinstance(self.config, ReasoningGymGraderConfig)
        assert ctx.sample is not None
        dataset = self.config.generator.dataset
        index = int((ctx.metadata or {})["reasoning_gym_index"])
        replies = [m for m in ctx.sample.messages if m.get("role") == "assistant"]
        answer = extract_answer(str(replies[-1].get("content") or "")) if replies else None
        score = float(dataset.score_answer(answer, dataset[index]))
        ctx.sample.metrics.update(score=score, answered=float(answer is not None))
        ctx.set_reward(score)


class ReasoningGymSource:
    """``SOURCE`` of this adapter."""

    def load(self, spec: EnvironmentSpec) -> Environment:
        from reasoning_gym.utils import SYSTEM_PROMPTS

        registry = _registry()
        if spec.name not in registry:
            raise EnvironmentSpecError(
                f"{spec}: Reasoning Gym has no generator {spec.name!r}; "
                "`osmosis env list` shows the installed ones."
            )
        dataset_cls, config_cls = registry[spec.name]
        fields = {**typing.get_type_hints(config_cls), **ADAPTER_OPTIONS}
        options = typed_options(spec, fields, what=f"{config_cls.__name__}")
        prompt_key = options.pop("system_prompt", "default")
        if prompt_key not in SYSTEM_PROMPTS:
            raise EnvironmentSpecError(
                f"{spec}: system_prompt={prompt_key!r} is not one of Reasoning Gym's "
                f"SYSTEM_PROMPTS ({', '.join(SYSTEM_PROMPTS)})."
            )
        try:
            config = config_cls(**options)
            if hasattr(config, "validate"):
                config.validate()
        except (AssertionError, ValueError, TypeError) as exc:
            raise EnvironmentSpecError(f"{spec}: {config_cls.__name__} rejects it: {exc}") from exc
        dataset = dataset_cls(config=config)
        rows = [
            {
                "system_prompt": SYSTEM_PROMPTS[prompt_key],
                "user_prompt": str(entry["question"]),
                "ground_truth": str(entry["answer"]),
                "metadata": {"reasoning_gym_index": index},
            }
            for index, entry in enumerate(_entries(dataset))
        ]
        shared = _Generator(dataset)
        return Environment(
            spec=spec,
            workflow=ReasoningGymWorkflow,
            workflow_config=AgentWorkflowConfig(name=f"reasoning-gym:{spec.name}"),
            grader=ReasoningGymGrader,
            grader_config=ReasoningGymGraderConfig(
                name=f"reasoning-gym:{spec.name}", generator=shared
            ),
            rows=rows,
            metrics=METRICS,
            description=_describe(dataset_cls),
        )

    def list(self) -> Iterator[EnvironmentInfo]:
        for name, (dataset_cls, config_cls) in sorted(_registry().items()):
            size = next(
                (f.default for f in dataclasses.fields(config_cls) if f.name == "size"), None
            )
            yield EnvironmentInfo(
                spec=f"reasoning-gym:{name}",
                description=_describe(dataset_cls),
                rows=size if isinstance(size, int) else None,
                metrics=METRICS,
            )


def _entries(dataset: Any) -> Iterator[dict[str, Any]]:
    for index in range(len(dataset)):
        yield dataset[index]


def _describe(dataset_cls: type) -> str:
    return (dataset_cls.__doc__ or "").strip().splitlines()[0] if dataset_cls.__doc__ else ""


SOURCE = ReasoningGymSource()
