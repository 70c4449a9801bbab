"""Every TOML file and ``toml`` block in the skills loads with our config loaders (docs/skills.md)."""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from osmosis_cli.scaffolding.skill_docs import blocks, skill_documents
from osmosis_cli.scaffolding.skills import skills_source


def _loader_for(name: str, raw: Mapping[str, Any]) -> tuple[str, Callable[..., Any]]:
    from osmosis_ai.config import (
        parse_benchmark_config,
        parse_eval_config,
        parse_training_config,
    )

    if "training" in name or "training" in raw:
        return "training", parse_training_config
    if "benchmark" in name or "agents" in raw:
        return "benchmark", parse_benchmark_config
    return "eval", parse_eval_config


def load_problem(where: str, name: str, text: str, path: Path | None) -> str | None:
    """Why a config does not load (``None`` when it does)."""
    from osmosis_ai.config import ConfigError

    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return f"{where}: not TOML: {exc}"
    kind, parse = _loader_for(name, raw)
    try:
        parse(raw, path)
    except ConfigError as exc:
        return f"{where}: not a valid {kind} config: " + "; ".join(i.render() for i in exc.issues)
    return None


def _toml_sources() -> list[tuple[str, str, str, Path | None]]:
    """``(where, name used to pick the loader, text, path)`` of every TOML in the skills."""
    root = skills_source()
    sources: list[tuple[str, str, str, Path | None]] = [
        (str(path), path.name, path.read_text(encoding="utf-8"), path)
        for path in sorted(root.glob("*/references/**/*.toml"))
    ]
    for document in skill_documents(root):
        for block in blocks(document):
            if block.language == "toml" and "fragment" not in block.modes:
                sources.append((block.where, "", block.text, None))
    return sources


def test_every_skill_toml_loads_with_the_config_loader() -> None:
    problems = [
        problem
        for where, name, text, path in _toml_sources()
        if (problem := load_problem(where, name, text, path)) is not None
    ]
    assert problems == [], "\n".join(problems)


def test_toml_fragments_are_at_least_toml() -> None:
    for document in skill_documents(skills_source()):
        for block in blocks(document):
            if block.language == "toml" and "fragment" in block.modes:
                tomllib.loads(block.text)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("eval-x.toml", "[experiment]\nrollout = 1\n", "not a valid eval config: "),
        ("training-x.toml", "[training\n", "not TOML: "),
    ],
)
def test_the_check_reports_a_config_that_does_not_load(name: str, text: str, expected: str) -> None:
    problem = load_problem(name, name, text, None)
    assert problem is not None
    assert problem.startswith(f"{name}: {expected}"), problem
