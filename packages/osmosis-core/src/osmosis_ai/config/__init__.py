"""Eval, training and benchmark configs (``configs/{eval,training,benchmark}/*.toml``).

Public entry points: :func:`load_eval_config` and :func:`load_training_config` parse a file with
:mod:`tomllib`, report *every* problem at once as a :class:`ConfigError` (each issue carries its
key path, e.g. ``experiment.rollout``) and return validated pydantic models.
"""

from __future__ import annotations

from osmosis_ai.config.benchmark import (
    BenchmarkAgent,
    BenchmarkConfig,
    load_benchmark_config,
    parse_benchmark_config,
)
from osmosis_ai.config.errors import ConfigError, ConfigIssue
from osmosis_ai.config.loader import (
    load_eval_config,
    load_training_config,
    parse_eval_config,
    parse_training_config,
)
from osmosis_ai.config.models import (
    CheckpointsSection,
    EvalConfig,
    EvaluationSection,
    ExperimentSection,
    SamplingSection,
    SecretsSection,
    SubmitConfig,
    TrainingConfig,
    TrainingSection,
)

__all__ = [
    "BenchmarkAgent",
    "BenchmarkConfig",
    "CheckpointsSection",
    "ConfigError",
    "ConfigIssue",
    "EvalConfig",
    "EvaluationSection",
    "ExperimentSection",
    "SamplingSection",
    "SecretsSection",
    "SubmitConfig",
    "TrainingConfig",
    "TrainingSection",
    "load_benchmark_config",
    "load_eval_config",
    "load_training_config",
    "parse_benchmark_config",
    "parse_eval_config",
    "parse_training_config",
]
