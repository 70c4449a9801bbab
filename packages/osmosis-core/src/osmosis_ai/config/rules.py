"""Checks pydantic cannot express per key: section names, naming rules and cross-field rules.

They run on the raw TOML mapping so each issue points at the exact key that is wrong, and they
run even when pydantic finds other problems, so the user sees everything in one pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from osmosis_ai.config.errors import ConfigIssue
from osmosis_ai.config.models import (
    COMMIT_SHA_PATTERN,
    ENV_NAME_PATTERN,
    RESERVED_ENV_PREFIX,
    SECRET_NAME_PATTERN,
)

SHARED_SECTIONS = ("experiment", "advanced", "env", "secrets")
KIND_SECTIONS = {
    "eval": ("evaluation", "pricing"),
    "training": ("training", "sampling", "checkpoints"),
}


def allowed_sections(kind: str) -> tuple[str, ...]:
    return SHARED_SECTIONS + KIND_SECTIONS[kind]


def check(raw: Mapping[str, Any], kind: str) -> list[ConfigIssue]:
    """Return every rule violation in ``raw`` (a parsed TOML document)."""
    issues: list[ConfigIssue] = []
    allowed = allowed_sections(kind)
    for key, value in raw.items():
        if key not in allowed:
            what = "section" if isinstance(value, dict) else "key"
            issues.append(
                ConfigIssue(
                    key,
                    f"Unrecognized {what}; allowed sections are {', '.join(allowed)}",
                )
            )
    if "experiment" not in raw:
        issues.append(ConfigIssue("experiment", "Missing [experiment] section"))
    elif isinstance(raw["experiment"], dict):
        issues.extend(_check_experiment(raw["experiment"]))
    if kind == "eval" and "secrets" not in raw:
        issues.append(
            ConfigIssue(
                "secrets",
                "Missing [secrets] section; add `[secrets]` with `required = []` "
                "if the rollout needs no secrets",
            )
        )
    env = raw.get("env")
    if isinstance(env, dict):
        issues.extend(env_name_issues(env))
    secrets = raw.get("secrets")
    if isinstance(secrets, dict):
        issues.extend(_check_secrets(secrets, env if isinstance(env, dict) else {}))
    return issues


def _check_experiment(experiment: Mapping[str, Any]) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    rollout = experiment.get("rollout")
    if isinstance(rollout, str):
        problem = _single_segment_problem(rollout)
        if problem:
            issues.append(ConfigIssue("experiment.rollout", problem))
    entrypoint = experiment.get("entrypoint")
    if isinstance(entrypoint, str):
        problem = _relative_python_file_problem(entrypoint)
        if problem:
            issues.append(ConfigIssue("experiment.entrypoint", problem))
    env = experiment.get("env")
    if isinstance(env, str):
        from osmosis_ai.errors import ConfigurationError
        from osmosis_ai.rollout.integrations.environments import EnvironmentSpec

        try:
            EnvironmentSpec.parse(env)
        except ConfigurationError as exc:
            issues.append(ConfigIssue("experiment.env", str(exc)))
    branch = experiment.get("branch")
    if isinstance(branch, str) and (not branch or any(c.isspace() for c in branch)):
        issues.append(ConfigIssue("experiment.branch", "must be a non-empty name without spaces"))
    sha = experiment.get("commit_sha")
    if isinstance(sha, str) and not re.fullmatch(COMMIT_SHA_PATTERN, sha):
        issues.append(
            ConfigIssue("experiment.commit_sha", "must be 7 to 40 hexadecimal characters")
        )
    if "branch" in experiment and "commit_sha" in experiment:
        issues.append(ConfigIssue("experiment", "set either 'branch' or 'commit_sha', not both"))
    return issues


def _single_segment_problem(name: str) -> str | None:
    if not name.strip():
        return "must not be empty"
    if "/" in name or "\\" in name:
        return f"must be a single folder name under rollouts/ (no '/' or '\\'), got {name!r}"
    if name in {".", ".."}:
        return f"must be a folder name under rollouts/, got {name!r}"
    if PureWindowsPath(name).is_absolute() or PurePosixPath(name).is_absolute():
        return f"must be relative to rollouts/, got {name!r}"
    return None


def _relative_python_file_problem(path: str) -> str | None:
    if not path.strip():
        return "must not be empty"
    posix = PurePosixPath(path.replace("\\", "/"))
    if posix.is_absolute() or PureWindowsPath(path).is_absolute():
        return f"must be relative to the rollout folder, got {path!r}"
    if ".." in posix.parts:
        return f"must stay inside the rollout folder (no '..'), got {path!r}"
    if posix.suffix != ".py":
        return f"must be a Python file (e.g. main.py), got {path!r}"
    return None


def env_name_issues(env: Mapping[str, Any], prefix: str = "env") -> list[ConfigIssue]:
    """The names of an ``env`` table (at ``prefix``) that are reserved or not valid variable
    names (the eval config's ``[env]``, the benchmark config's and its agents')."""
    issues: list[ConfigIssue] = []
    for name in env:
        if name.startswith(RESERVED_ENV_PREFIX):
            issues.append(
                ConfigIssue(
                    f"{prefix}.{name}", f"names starting with {RESERVED_ENV_PREFIX} are reserved"
                )
            )
        elif not re.fullmatch(ENV_NAME_PATTERN, name):
            issues.append(
                ConfigIssue(
                    f"{prefix}.{name}",
                    "invalid name: use upper-case letters, digits and '_' (e.g. MY_FLAG)",
                )
            )
    return issues


def _check_secrets(secrets: Mapping[str, Any], env: Mapping[str, Any]) -> list[ConfigIssue]:
    required = secrets.get("required")
    if not isinstance(required, list):
        return []  # pydantic reports the missing key or wrong type
    issues: list[ConfigIssue] = []
    seen: set[str] = set()
    for index, name in enumerate(required):
        if not isinstance(name, str):
            continue
        key = f"secrets.required[{index}]"
        if not re.fullmatch(SECRET_NAME_PATTERN, name):
            issues.append(
                ConfigIssue(
                    key,
                    f"invalid secret name {name!r}: use upper-case letters, digits and '_', "
                    "starting with a letter (e.g. OPENAI_API_KEY)",
                )
            )
        if name in seen:
            issues.append(ConfigIssue(key, f"duplicate secret name {name!r}"))
        seen.add(name)
        if name in env:
            issues.append(
                ConfigIssue(key, f"{name!r} is also set in [env]; a name is either env or secret")
            )
    return issues
