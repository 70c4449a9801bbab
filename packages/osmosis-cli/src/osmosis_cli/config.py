"""Compatibility path: the config loaders moved to :mod:`osmosis_ai.config` (osmosis-core).

``from osmosis_cli.config import load_eval_config`` keeps working; new code imports
``osmosis_ai.config``, which the evaluation library (``osmosis_ai.eval``) shares.
"""

from __future__ import annotations

from osmosis_ai.config import (
    CheckpointsSection,
    ConfigError,
    ConfigIssue,
    EvalConfig,
    EvaluationSection,
    ExperimentSection,
    SamplingSection,
    SecretsSection,
    SubmitConfig,
    TrainingConfig,
    TrainingSection,
    load_eval_config,
    load_training_config,
    parse_eval_config,
    parse_training_config,
)

__all__ = [
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
    "load_eval_config",
    "load_training_config",
    "parse_eval_config",
    "parse_training_config",
]
