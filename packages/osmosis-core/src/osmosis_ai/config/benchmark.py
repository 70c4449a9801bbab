"""Benchmark configs (``configs/benchmark/*.toml``): what ``osmosis benchmark run`` runs locally
and ``osmosis benchmark submit`` sends to the platform.

The sections are the platform's (``[experiment] benchmark``, ``[tasks]``, ``[execution]``,
``[verifier]``, ``[secrets]``, ``[env]``, ``[[agents]]`` with ``[agents.model]`` and
``[agents.env]``), plus three local keys on an agent (``name``, ``rollout``, ``entrypoint``): on
the platform an agent is a harness, locally it is one of the workspace's rollouts. Every problem
of a file is reported at once as a :class:`~osmosis_ai.config.ConfigError`, each with its key
path (``agents[1].model.api_key_secret``) and what to write instead. The guide is
``docs/benchmarks.md``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from osmosis_ai.config.errors import ConfigError, ConfigIssue
from osmosis_ai.config.models import SECRET_NAME_PATTERN
from osmosis_ai.config.rules import env_name_issues

__all__ = [
    "BenchmarkAgent",
    "BenchmarkConfig",
    "BenchmarkExecution",
    "BenchmarkModel",
    "load_benchmark_config",
    "parse_benchmark_config",
]

KIND = "benchmark"
SECTIONS = ("experiment", "tasks", "execution", "verifier", "secrets", "env", "agents")
MAX_AGENTS = 8
MAX_SECRETS = 16
#: Secret names the platform's benchmark runner keeps for itself.
RESERVED_SECRET_NAMES = frozenset({"DAYTONA_API_KEY", "DAYTONA_API_URL"})
#: Harnesses that read a credential of their own, and the variable they read.
HARNESS_KEY_ENV = {"cursor-cli": "CURSOR_API_KEY"}
#: Keys of an agent that only the local run reads (``submit`` leaves them out).
LOCAL_AGENT_KEYS = ("name", "rollout", "entrypoint")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


NonEmpty = Annotated[str, Field(min_length=1, pattern=r"\S")]


class BenchmarkExperiment(_Strict):
    #: The platform benchmark's key (``osmosis benchmark list``); locally, a label of the run.
    benchmark: NonEmpty


class BenchmarkTasks(_Strict):
    #: Platform: ``"parity"``. Locally: a folder of Harbor task folders (relative to the config).
    task_set: NonEmpty | None = None
    task_names: list[NonEmpty] | None = None
    categories: list[NonEmpty] | None = None


class BenchmarkModel(_Strict):
    """``[agents.model]``: ``provider`` (``openai/gpt-5-mini``), ``endpoint`` (an
    OpenAI-compatible ``base_url``) or ``hosted`` (a platform LoRA model; platform only)."""

    type: Literal["provider", "endpoint", "hosted"]
    model: NonEmpty | None = None
    api_key_secret: str | None = None
    base_url: NonEmpty | None = None
    extra_headers: dict[str, str] | None = None
    base_model: NonEmpty | None = None
    lora_model_name: NonEmpty | None = None


class BenchmarkAgent(_Strict):
    harness: NonEmpty | None = None
    harness_api_key_secret: str | None = None
    model: BenchmarkModel
    env: dict[str, str] = Field(default_factory=dict)
    # local run only
    name: NonEmpty | None = None
    rollout: NonEmpty | None = None
    entrypoint: NonEmpty = "main.py"

    def label(self, index: int) -> str:
        """How the leaderboard names this agent: ``name``, else ``rollout (model)``."""
        if self.name:
            return self.name
        model = self.model.model or self.model.lora_model_name or self.model.type
        who = self.rollout or self.harness or f"agent-{index + 1}"
        return f"{who} ({model})"


class BenchmarkExecution(_Strict):
    attempts_per_task: int = Field(default=1, ge=1, le=100)
    max_concurrent_attempts: int | None = Field(default=None, ge=1, le=1000)
    timeout_multiplier: float | None = Field(default=None, gt=0, le=100)
    max_retries: int = Field(default=0, ge=0, le=10)
    pass_threshold: float = Field(default=1.0, ge=0, le=1)
    judge_model: NonEmpty | None = None
    judge_api_key_secret: str | None = None


class BenchmarkNames(_Strict):
    required: list[str] = Field(default_factory=list, max_length=MAX_SECRETS)


class BenchmarkConfig(_Strict):
    experiment: BenchmarkExperiment
    tasks: BenchmarkTasks = Field(default_factory=BenchmarkTasks)
    execution: BenchmarkExecution = Field(default_factory=BenchmarkExecution)
    verifier: BenchmarkNames = Field(default_factory=BenchmarkNames)
    secrets: BenchmarkNames = Field(default_factory=BenchmarkNames)
    env: dict[str, str] = Field(default_factory=dict)
    agents: list[BenchmarkAgent] = Field(min_length=1, max_length=MAX_AGENTS)
    source_path: Path | None = None

    @property
    def required_secrets(self) -> list[str]:
        """Every secret name the run needs, once each: the agents' model keys, harness keys,
        the judge's key, the verifier's and ``[secrets] required``."""
        names = [a.model.api_key_secret for a in self.agents if a.model.api_key_secret]
        names += [a.harness_api_key_secret for a in self.agents if a.harness_api_key_secret]
        if self.execution.judge_api_key_secret:
            names.append(self.execution.judge_api_key_secret)
        names += self.verifier.required + self.secrets.required
        return list(dict.fromkeys(names))

    def platform_body(self) -> dict[str, Any]:
        """The submit request's sections (``docs/platform-api.md``, "Benchmarks")."""
        agents = [
            agent.model_dump(exclude_none=True, exclude=set(LOCAL_AGENT_KEYS))
            for agent in self.agents
        ]
        execution = self.execution.model_dump(exclude_none=True)
        if self.verifier.required:
            execution["verifier_secrets"] = list(self.verifier.required)
        body: dict[str, Any] = {
            "experiment_config": self.experiment.model_dump(),
            "agents": agents,
            "execution_config": execution,
        }
        tasks = self.tasks.model_dump(exclude_none=True)
        if tasks:
            body["tasks_config"] = tasks
        if self.env:
            body["env_config"] = dict(self.env)
        return body


def load_benchmark_config(path: str | Path) -> BenchmarkConfig:
    """Load ``configs/benchmark/<name>.toml``; raises :class:`ConfigError` listing every problem."""
    from osmosis_ai.config.loader import read_toml

    path = Path(path)
    return parse_benchmark_config(read_toml(path, KIND), path)


def parse_benchmark_config(raw: Mapping[str, Any], path: Path | None = None) -> BenchmarkConfig:
    """Validate an already parsed benchmark config mapping."""
    from osmosis_ai.config.loader import validate_model

    issues = _shape_issues(raw)
    document = {key: value for key, value in raw.items() if key in SECTIONS}
    document["source_path"] = path
    config = validate_model(  # a missing [agents] is reported by _shape_issues
        BenchmarkConfig,
        document,
        issues,
        skip=lambda issue, error_type: error_type == "missing" and issue.key == "agents",
    )
    if config is None:
        raise ConfigError(KIND, path, issues)
    issues.extend(_cross_issues(config))
    if issues:
        raise ConfigError(KIND, path, issues)
    return config


def _shape_issues(raw: Mapping[str, Any]) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    for key, value in raw.items():
        if key not in SECTIONS:
            what = "section" if isinstance(value, dict) else "key"
            issues.append(
                ConfigIssue(key, f"Unrecognized {what}; allowed sections are {', '.join(SECTIONS)}")
            )
    if "experiment" not in raw:
        issues.append(
            ConfigIssue(
                "experiment",
                'Missing [experiment] section; add `[experiment]` with `benchmark = "<key>"` '
                "(a key from `osmosis benchmark list`)",
            )
        )
    if "agents" not in raw:
        issues.append(
            ConfigIssue(
                "agents",
                "Missing [[agents]]; add at least one `[[agents]]` table with an "
                "`[agents.model]` (keep [[agents]] last in the file)",
            )
        )
    elif not isinstance(raw["agents"], list):
        issues.append(
            ConfigIssue("agents", "must be an array of tables: write `[[agents]]`, not `[agents]`")
        )
    return issues


def _name_issue(key: str, name: str) -> ConfigIssue | None:
    if re.fullmatch(SECRET_NAME_PATTERN, name):
        return None
    return ConfigIssue(
        key,
        f"invalid secret name {name!r}: use upper-case letters, digits and '_', starting with "
        "a letter (e.g. OPENAI_API_KEY)",
    )


def _model_issues(key: str, model: BenchmarkModel) -> list[ConfigIssue]:
    needed = {
        "provider": ("model", "api_key_secret"),
        "endpoint": ("model", "base_url"),
        "hosted": ("base_model", "lora_model_name"),
    }[model.type]
    allowed = {
        "provider": {"type", "model", "api_key_secret"},
        "endpoint": {"type", "model", "base_url", "api_key_secret", "extra_headers"},
        "hosted": {"type", "base_model", "lora_model_name"},
    }[model.type]
    issues = [
        ConfigIssue(f"{key}.{name}", f"required for type = {model.type!r}")
        for name in needed
        if getattr(model, name) is None
    ]
    issues += [
        ConfigIssue(f"{key}.{name}", f"not used by type = {model.type!r}; remove it")
        for name in model.model_fields_set - allowed
        if getattr(model, name) is not None
    ]
    if model.extra_headers and any(h.casefold() == "authorization" for h in model.extra_headers):
        issues.append(
            ConfigIssue(
                f"{key}.extra_headers",
                "must not set Authorization; name the key's secret in api_key_secret instead",
            )
        )
    if model.api_key_secret is not None:
        bad = _name_issue(f"{key}.api_key_secret", model.api_key_secret)
        if bad:
            issues.append(bad)
        elif model.api_key_secret in RESERVED_SECRET_NAMES:
            issues.append(
                ConfigIssue(
                    f"{key}.api_key_secret",
                    f"{model.api_key_secret!r} is reserved by the benchmark runner; store the "
                    "model key under another secret name",
                )
            )
    return issues


def _cross_issues(config: BenchmarkConfig) -> list[ConfigIssue]:
    issues = env_name_issues(config.env)
    execution = config.execution
    for key, names in (
        ("verifier.required", config.verifier.required),
        ("secrets.required", config.secrets.required),
    ):
        seen: set[str] = set()
        for index, name in enumerate(names):
            bad = _name_issue(f"{key}[{index}]", name)
            if bad:
                issues.append(bad)
            if name in seen:
                issues.append(ConfigIssue(f"{key}[{index}]", f"duplicate secret name {name!r}"))
            seen.add(name)
    if execution.judge_api_key_secret is not None:
        bad = _name_issue("execution.judge_api_key_secret", execution.judge_api_key_secret)
        if bad:
            issues.append(bad)
    injected = [execution.judge_api_key_secret, *config.verifier.required]
    for index, agent in enumerate(config.agents):
        key = f"agents[{index}]"
        issues += _model_issues(f"{key}.model", agent.model)
        issues += env_name_issues(agent.env, f"{key}.env")
        env = {**config.env, **agent.env}
        for name in [agent.model.api_key_secret, *injected]:
            if name and name in env:
                where = f"{key}.env" if name in agent.env else "env"
                issues.append(
                    ConfigIssue(
                        f"{where}.{name}",
                        f"{name!r} is also a secret of agent {index + 1}; the secret's value "
                        "is injected under that name, so remove the env var or rename it",
                    )
                )
        wanted = HARNESS_KEY_ENV.get(agent.harness or "")
        if wanted and agent.harness_api_key_secret != wanted:
            issues.append(
                ConfigIssue(
                    f"{key}.harness_api_key_secret",
                    f"the {agent.harness} harness reads {wanted}: set "
                    f'harness_api_key_secret = "{wanted}" (a secret of that name)',
                )
            )
        elif not wanted and agent.harness_api_key_secret is not None:
            issues.append(
                ConfigIssue(
                    f"{key}.harness_api_key_secret",
                    "this harness takes no key of its own; remove harness_api_key_secret",
                )
            )
        if agent.rollout is not None and ("/" in agent.rollout or agent.rollout in (".", "..")):
            issues.append(
                ConfigIssue(
                    f"{key}.rollout",
                    f"must be one folder name under rollouts/, got {agent.rollout!r}",
                )
            )
        if not agent.entrypoint.endswith(".py") or ".." in Path(agent.entrypoint).parts:
            issues.append(
                ConfigIssue(
                    f"{key}.entrypoint",
                    f"must be a Python file inside the rollout folder (e.g. main.py), got "
                    f"{agent.entrypoint!r}",
                )
            )
    labels = [agent.label(i) for i, agent in enumerate(config.agents)]
    for index, label in enumerate(labels):
        if labels.index(label) != index:
            issues.append(
                ConfigIssue(
                    f"agents[{index}].name",
                    f'two agents are both called {label!r}; give each a distinct name = "..."',
                )
            )
    return issues
