"""Pydantic models of the submit TOML shared by ``osmosis eval`` and ``osmosis train``.

The schema follows the public osmosis config format (sections ``experiment``, ``evaluation`` /
``training`` / ``sampling`` / ``checkpoints``, ``advanced``, ``env``, ``secrets``). Unknown keys
are errors so a typo never silently falls back to a default. Values are type-checked strictly
(a quoted ``"4"`` is not an integer) and numbers must be finite, because a local eval consumes
them directly. Cross-field and naming rules live in :mod:`osmosis_ai.config.rules`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from osmosis_ai.errors import ConfigurationError

ENV_NAME_PATTERN = r"^[A-Z_][A-Z0-9_]*$"
SECRET_NAME_PATTERN = r"^[A-Z][A-Z0-9_]*$"
COMMIT_SHA_PATTERN = r"^[0-9a-fA-F]{7,40}$"
RESERVED_ENV_PREFIX = "_OSMOSIS_"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _finite(value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


class ExperimentSection(_Section):
    """What to run: the rollout folder, its entrypoint, the model and the dataset.

    With ``env = "SOURCE:NAME"`` (an environment from another ecosystem, docs/environments.md)
    the environment is the rollout and its rows the dataset: ``rollout``, ``entrypoint`` and
    ``dataset`` may then be left out (they default to the environment's name, ``main.py`` and
    the spec itself, which is what ``eval submit`` sends with ``env``).
    """

    rollout: str = Field(description="Folder name under rollouts/ (one path segment).")
    entrypoint: str = Field(description="Python file inside rollouts/<rollout>/, e.g. main.py.")
    model_path: str = Field(description="Model to evaluate or train (LiteLLM id for eval).")
    dataset: str = Field(description="Dataset name on the platform, or a file under data/.")
    env: str | None = Field(
        default=None, description="An environment spec SOURCE:NAME[?k=v] to run as the rollout."
    )
    branch: str | None = None
    commit_sha: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _environment_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("env"), str):
            return data
        from osmosis_ai.rollout.integrations.environments import EnvironmentSpec

        try:
            spec = EnvironmentSpec.parse(data["env"])
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from None
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{spec.source}-{spec.name}").strip("-._")
        return {
            "rollout": slug or "environment",
            "entrypoint": "main.py",
            "dataset": str(spec),
            **data,
        }


class EvaluationSection(_Section):
    """Eval knobs. ``limit`` omitted or <= 0 means every row (locally)."""

    limit: int | None = None
    n: int = Field(default=1, ge=1)
    batch_size: int = Field(default=1, ge=1)
    pass_threshold: float = 1.0
    agent_workflow_timeout_s: float | None = Field(default=None, gt=0)
    grader_timeout_s: float | None = Field(default=None, gt=0)
    #: Local ``osmosis eval run`` only: the run's cost budget in USD (``--max-cost``).
    max_cost_usd: float | None = Field(default=None, gt=0)
    #: Per grader metric (a key of ``ctx.sample.metrics``), the value at or above which a
    #: sample passes on that metric: ``metrics.json`` then gives the metric's pass rate too.
    metric_thresholds: dict[str, float] = Field(default_factory=dict)
    #: Local ``osmosis eval run``: reward-hacking tripwires silenced, each name with the reason
    #: (``[evaluation.silence_tripwires]``; docs/tripwires.md).
    silence_tripwires: dict[str, str] = Field(default_factory=dict)

    _check_finite = field_validator(
        "pass_threshold", "agent_workflow_timeout_s", "grader_timeout_s", "max_cost_usd"
    )(_finite)


class TrainingSection(_Section):
    """Training knobs; the platform owns their defaults."""

    lr: float | None = Field(default=None, gt=0)
    total_epochs: int | None = Field(default=None, ge=1)
    n_samples_per_prompt: int | None = Field(default=None, ge=1)
    rollout_batch_size: int | None = Field(default=None, ge=1)
    max_prompt_length: int | None = Field(default=None, ge=1)
    max_response_length: int | None = Field(default=None, ge=1)
    agent_workflow_timeout_s: float | None = Field(default=None, gt=0)
    grader_timeout_s: float | None = Field(default=None, gt=0)

    _check_finite = field_validator("lr", "agent_workflow_timeout_s", "grader_timeout_s")(_finite)


class SamplingSection(_Section):
    rollout_temperature: float | None = Field(default=None, ge=0)
    rollout_top_p: float | None = Field(default=None, gt=0, le=1)

    _check_finite = field_validator("rollout_temperature", "rollout_top_p")(_finite)


class CheckpointsSection(_Section):
    eval_interval: int | None = Field(default=None, ge=1)
    checkpoint_save_freq: int | None = Field(default=None, ge=1)


class SecretsSection(_Section):
    """Names of secrets the rollout needs; values never live in the file."""

    required: list[str]


class SubmitConfig(_Section):
    """Fields shared by eval and training configs."""

    kind: ClassVar[str]
    source_path: Path | None = Field(default=None, exclude=True)
    experiment: ExperimentSection
    advanced: dict[str, Any] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)

    @property
    def rollout(self) -> str:
        return self.experiment.rollout

    @property
    def entrypoint(self) -> str:
        return self.experiment.entrypoint

    @property
    def required_secrets(self) -> list[str]:
        secrets: SecretsSection | None = getattr(self, "secrets", None)
        return list(secrets.required) if secrets is not None else []

    def rollout_dir(self, workspace: Path) -> Path:
        """``<workspace>/rollouts/<rollout>`` (the name is validated to be one segment)."""
        return workspace / "rollouts" / self.experiment.rollout

    def entrypoint_path(self, workspace: Path) -> Path:
        """The entrypoint file; containment is checked by the preflight, not here."""
        return self.rollout_dir(workspace) / self.experiment.entrypoint

    def sections_for_platform(self) -> dict[str, Any]:
        """The explicitly written sections, as the platform submit body expects them."""
        raise NotImplementedError


class EvalConfig(SubmitConfig):
    """A validated ``configs/eval/<name>.toml``."""

    kind: ClassVar[str] = "eval"
    evaluation: EvaluationSection = Field(default_factory=EvaluationSection)
    secrets: SecretsSection  # required for eval (``required = []`` is fine)
    #: ``[pricing."<model>"]``: USD per million tokens (``input``, ``output``, ``cached_input``),
    #: overriding the pricing library (checked by :func:`osmosis_ai.eval._impl.cost.pricing.parse_overrides`).
    pricing: dict[str, dict[str, float]] = Field(default_factory=dict)

    @field_validator("pricing")
    @classmethod
    def _check_pricing(cls, value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        from osmosis_ai.eval._impl.cost.pricing import parse_overrides

        try:
            parse_overrides(value)
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from None
        return value

    def sections_for_platform(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "experiment_config": self.experiment.model_dump(exclude_none=True),
            # max_cost_usd is a local-run budget, not a platform field.
            "evaluation_config": self.evaluation.model_dump(
                exclude_unset=True, exclude={"max_cost_usd"}
            ),
        }
        if self.advanced:
            body["advanced_config"] = dict(self.advanced)
        if self.env:
            body["env_config"] = dict(self.env)
        return body


class TrainingConfig(SubmitConfig):
    """A validated ``configs/training/<name>.toml``."""

    kind: ClassVar[str] = "training"
    training: TrainingSection = Field(default_factory=TrainingSection)
    sampling: SamplingSection = Field(default_factory=SamplingSection)
    checkpoints: CheckpointsSection = Field(default_factory=CheckpointsSection)
    secrets: SecretsSection | None = None  # optional for training

    def sections_for_platform(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "experiment_config": self.experiment.model_dump(exclude_none=True),
            "training_config": self.training.model_dump(exclude_unset=True),
            "sampling_config": self.sampling.model_dump(exclude_unset=True),
            "checkpoints_config": self.checkpoints.model_dump(exclude_unset=True),
        }
        if self.advanced:
            body["advanced_config"] = dict(self.advanced)
        if self.env:
            body["env_config"] = dict(self.env)
        return body
