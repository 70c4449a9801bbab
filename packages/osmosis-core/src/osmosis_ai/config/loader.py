"""Read, parse and validate submit configs, collecting every issue before failing."""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from osmosis_ai.config import rules
from osmosis_ai.config.errors import ConfigError, ConfigIssue
from osmosis_ai.config.models import EvalConfig, SubmitConfig, TrainingConfig


def load_eval_config(path: str | Path) -> EvalConfig:
    """Load ``configs/eval/<name>.toml``; raises :class:`ConfigError` listing every problem."""
    return _load(Path(path), "eval", EvalConfig)


def load_training_config(path: str | Path) -> TrainingConfig:
    """Load ``configs/training/<name>.toml``; raises :class:`ConfigError` listing every problem."""
    return _load(Path(path), "training", TrainingConfig)


def parse_eval_config(raw: Mapping[str, Any], path: Path | None = None) -> EvalConfig:
    """Validate an already parsed eval config mapping."""
    return _validate(raw, "eval", EvalConfig, path)


def parse_training_config(raw: Mapping[str, Any], path: Path | None = None) -> TrainingConfig:
    """Validate an already parsed training config mapping."""
    return _validate(raw, "training", TrainingConfig, path)


def _load[Config: SubmitConfig](path: Path, kind: str, model: type[Config]) -> Config:
    return _validate(read_toml(path, kind), kind, model, path)


def read_toml(path: Path, kind: str) -> dict[str, Any]:
    """The TOML document at ``path`` (a ``kind`` config); a missing, unreadable or invalid file
    raises :class:`ConfigError` saying which."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(kind, path, [ConfigIssue("", "file not found")]) from None
    except IsADirectoryError:
        raise ConfigError(
            kind, path, [ConfigIssue("", "is a directory, not a TOML file")]
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(kind, path, [ConfigIssue("", f"cannot be read: {exc}")]) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(kind, path, [ConfigIssue("", f"not valid TOML: {exc}")]) from None


def _validate[Config: SubmitConfig](
    raw: Mapping[str, Any], kind: str, model: type[Config], path: Path | None
) -> Config:
    issues = rules.check(raw, kind)
    # Rules already say "Missing [secrets] section" etc.; drop pydantic's duplicate of those.
    reported = {(issue.key, "missing") for issue in issues}
    allowed = rules.allowed_sections(kind)
    document = {key: value for key, value in raw.items() if key in allowed}
    document["source_path"] = path
    config = validate_model(
        model, document, issues, skip=lambda issue, error_type: (issue.key, error_type) in reported
    )
    if config is None or issues:
        raise ConfigError(kind, path, issues)
    return config


def validate_model[M: BaseModel](
    model: type[M],
    document: Mapping[str, Any],
    issues: list[ConfigIssue],
    *,
    skip: Callable[[ConfigIssue, str], bool],
) -> M | None:
    """``model`` validated from ``document``, or ``None`` when pydantic refuses it; each of its
    errors becomes a :class:`ConfigIssue` appended to ``issues`` unless already there or
    ``skip(issue, error_type)`` says a rule reported it in its own words."""
    try:
        return model.model_validate(document)
    except ValidationError as exc:
        for error in exc.errors():
            issue = _issue_from_pydantic(error)
            if issue not in issues and not skip(issue, error["type"]):
                issues.append(issue)
        return None


def _key_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


_TYPE_NAMES = {
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "string_type": "a string",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
}


def _issue_from_pydantic(error: Any) -> ConfigIssue:
    loc = tuple(error["loc"])
    key = _key_path(loc)
    kind = error["type"]
    value = error.get("input")
    if kind == "missing":
        if len(loc) == 2 and loc[0] == "experiment":
            return ConfigIssue(key, f"Missing '{loc[1]}' in [experiment] section")
        if len(loc) == 1:
            return ConfigIssue(key, f"Missing [{loc[0]}] section")
        return ConfigIssue(key, "Missing required key")
    if kind == "extra_forbidden":
        return ConfigIssue(key, "Unrecognized key")
    if kind in _TYPE_NAMES:
        return ConfigIssue(key, f"must be {_TYPE_NAMES[kind]}, got {value!r}")
    message = str(error.get("msg", "invalid value"))
    message = message.removeprefix("Value error, ")
    return ConfigIssue(key, f"{message[:1].lower()}{message[1:]}")
