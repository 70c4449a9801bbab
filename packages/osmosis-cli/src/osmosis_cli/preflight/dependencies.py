"""Are the rollout's declared dependencies installed in this environment?

The preflight imports the entrypoint with the CLI's interpreter. If the rollout declares
dependencies that are missing here (a framework the CLI does not need, say), importing it would
only produce a misleading failure, so the import is skipped with a warning instead; the rollout's
own environment (``uv sync``, the platform's image) is where it really runs.
"""

from __future__ import annotations

import tomllib
from collections.abc import Collection
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from packaging.markers import UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name


@dataclass
class DependencyReport:
    declared: list[str] = field(default_factory=list)
    unsatisfied: list[str] = field(default_factory=list)
    problem: str | None = None  # pyproject missing or malformed: nothing could be checked


def check_declared_dependencies(
    rollout_dir: Path, *, ignore: Collection[str] = ()
) -> DependencyReport:
    """``ignore``: requirement strings (as written) not to check, e.g. a 0.3 SDK pin that
    :mod:`.sdk_pin` reports on its own."""
    pyproject = rollout_dir / "pyproject.toml"
    report = DependencyReport()
    if not pyproject.is_file():
        report.problem = "no pyproject.toml (the rollout declares no dependencies)"
        return report
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        declared = data.get("project", {}).get("dependencies", [])
        if not isinstance(declared, list) or not all(isinstance(d, str) for d in declared):
            raise ValueError("[project].dependencies must be a list of strings")
    except (OSError, ValueError) as exc:  # TOMLDecodeError is a ValueError
        report.problem = f"pyproject.toml could not be read ({exc}); dependencies not checked"
        return report
    report.declared = list(declared)
    visited: set[tuple[str, str]] = set()
    for spec in declared:
        if spec in ignore:
            continue
        report.unsatisfied.extend(_unsatisfied(spec, visited))
    return report


def _unsatisfied(spec: str, visited: set[tuple[str, str]], extra: str = "") -> list[str]:
    try:
        requirement = Requirement(spec)
    except InvalidRequirement as exc:
        return [f"{spec!r} is not a valid requirement ({exc})"]
    if requirement.marker is not None:
        try:
            if not requirement.marker.evaluate({"extra": extra}):
                return []
        except UndefinedEnvironmentName:
            return []
    name = canonicalize_name(requirement.name)
    try:
        installed = metadata.version(requirement.name)
    except metadata.PackageNotFoundError:
        return [f"{requirement.name} is not installed (needs {spec})"]
    if requirement.specifier and not requirement.specifier.contains(installed, prereleases=True):
        return [f"{requirement.name} {installed} is installed, but {spec} is required"]
    problems: list[str] = []
    for wanted in sorted(requirement.extras):
        key = (name, wanted)
        if key in visited:
            continue
        visited.add(key)
        for sub in metadata.requires(requirement.name) or []:
            try:
                sub_req = Requirement(sub)
            except InvalidRequirement:
                continue
            if sub_req.marker is None:
                continue  # base dependencies are the installer's business, not an extra's
            try:
                wanted_here = sub_req.marker.evaluate({"extra": wanted})
                always = sub_req.marker.evaluate({"extra": ""})
            except UndefinedEnvironmentName:
                continue
            if wanted_here and not always:
                problems.extend(
                    f"{p} (for {requirement.name}[{wanted}])"
                    for p in _unsatisfied(_without_marker(sub_req), visited)
                )
    return problems


def _without_marker(requirement: Requirement) -> str:
    extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
    return f"{requirement.name}{extras}{requirement.specifier}"
