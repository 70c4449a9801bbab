"""``osmosis doctor``: is this workspace and environment ready, and if not, what to do.

Checks never import user code or frameworks (versions come from package metadata), so the
doctor stays fast and cannot be broken by the thing it diagnoses.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from osmosis_cli.preflight.sdk_pin import apply_pin_fixes, legacy_sdk_pins
from osmosis_cli.workspace import REQUIRED_DIRS, find_workspace, missing_dirs

Status = Literal["ok", "warning", "error", "info"]

# integration distribution -> (framework distribution, extra of the umbrella package)
INTEGRATIONS: dict[str, tuple[str, str]] = {
    "osmosis-strands": ("strands-agents", "strands"),
    "osmosis-openai-agents": ("openai-agents", "openai-agents"),
    "osmosis-harbor": ("harbor", "harbor"),
    "osmosis-pydantic-ai": ("pydantic-ai-slim", "pydantic-ai"),
    "osmosis-langgraph": ("langgraph", "langgraph"),
    "osmosis-adk": ("google-adk", "adk"),
}


@dataclass(frozen=True, slots=True)
class DoctorCheck:
    name: str
    status: Status
    message: str
    fix: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "message": self.message, "fix": self.fix}


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def check_workspace(start: Path, *, fix: bool) -> tuple[Path | None, list[DoctorCheck]]:
    checks: list[DoctorCheck] = []
    root = find_workspace(start)
    if root is None:
        checks.append(
            DoctorCheck(
                "workspace",
                "error",
                f"{start.resolve()} is not inside a git repository or osmosis workspace",
                "osmosis init",
            )
        )
        return None, checks
    checks.append(DoctorCheck("workspace", "ok", str(root)))
    missing = missing_dirs(root)
    if missing and fix:
        for folder in missing:
            (root / folder).mkdir(parents=True, exist_ok=True)
        checks.append(DoctorCheck("layout", "ok", f"created {', '.join(m + '/' for m in missing)}"))
    elif missing:
        checks.append(
            DoctorCheck(
                "layout",
                "error",
                f"missing {', '.join(m + '/' for m in missing)}",
                "osmosis doctor --fix",
            )
        )
    else:
        checks.append(DoctorCheck("layout", "ok", ", ".join(d + "/" for d in REQUIRED_DIRS)))
    if not (root / "AGENTS.md").is_file():
        checks.append(
            DoctorCheck(
                "agent guide",
                "warning",
                "no AGENTS.md (guidance for AI coding agents)",
                "osmosis init (adds it without touching existing files)",
            )
        )
    checks.append(check_skills(root))
    checks.extend(_check_rollouts(root))
    return root, checks


def check_skills(root: Path) -> DoctorCheck:
    """Are the workspace's Agent Skills those this CLI ships (local edits are fine)?"""
    from osmosis_cli.scaffolding.skills import outdated_names, skill_states

    states = skill_states(root)
    stale = outdated_names(states)
    edited = [s.name for s in states if s.status == "locally-edited"]
    if stale:
        return DoctorCheck(
            "agent skills",
            "warning",
            f"outdated, missing or new: {', '.join(stale)}",
            "osmosis doctor --fix (or osmosis skills update; local edits are kept)",
        )
    note = f" ({len(edited)} locally edited: {', '.join(edited)})" if edited else ""
    return DoctorCheck("agent skills", "ok", f"{len(states)} skill(s) up to date{note}")


def _check_rollouts(root: Path) -> list[DoctorCheck]:
    from osmosis_ai.config import ConfigError, load_eval_config, load_training_config

    checks: list[DoctorCheck] = []
    rollouts = root / "rollouts"
    names = sorted(p.name for p in rollouts.iterdir() if p.is_dir()) if rollouts.is_dir() else []
    for name in names:
        folder = rollouts / name
        lacking = [f for f in ("main.py", "pyproject.toml") if not (folder / f).is_file()]
        if lacking:
            checks.append(
                DoctorCheck(
                    f"rollout {name}",
                    "warning",
                    f"no {' or '.join(lacking)} in rollouts/{name}",
                    f"see `osmosis rollout init {name}` for the expected files",
                )
            )
        else:
            checks.append(DoctorCheck(f"rollout {name}", "ok", f"rollouts/{name}"))
        pins = legacy_sdk_pins(folder)
        if pins:
            checks.append(
                DoctorCheck(
                    f"rollout {name} sdk pin",
                    "warning",
                    f"rollouts/{name} pins the 0.3 SDK: its code runs here, but `pip install -e "
                    f"rollouts/{name}` and `eval run --isolated` would install the old osmosis-ai; "
                    "change " + "; ".join(p.describe(root) for p in pins),
                    "osmosis doctor --fix",
                )
            )
    for kind, loader in (("eval", load_eval_config), ("training", load_training_config)):
        folder = root / "configs" / kind
        for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
            label = f"configs/{kind}/{path.name}"
            try:
                config = loader(path)
            except ConfigError as exc:
                checks.append(
                    DoctorCheck(
                        label,
                        "error",
                        "; ".join(i.render() for i in exc.issues),
                        f"osmosis rollout validate {label}",
                    )
                )
                continue
            if config.rollout not in names:
                checks.append(
                    DoctorCheck(
                        label,
                        "error",
                        f"rollout {config.rollout!r} does not exist under rollouts/",
                        f"fix experiment.rollout or run `osmosis rollout init {config.rollout}`",
                    )
                )
            else:
                checks.append(DoctorCheck(label, "ok", f"rollout {config.rollout}"))
    return checks


def fix_sdk_pins(root: Path) -> list[str]:
    """``doctor --fix``: rewrite every rollout's 0.3 SDK pin; returns the edits made."""
    rollouts = root / "rollouts"
    folders = sorted(p for p in rollouts.iterdir() if p.is_dir()) if rollouts.is_dir() else []
    return [
        pin.describe(root) for folder in folders for pin in apply_pin_fixes(legacy_sdk_pins(folder))
    ]


def check_uv() -> DoctorCheck:
    """Find uv as the backends do and run ``uv --version``: its answer, or why it failed."""
    from osmosis_ai.uv_binary import INSTALL_HINT, UvNotFoundError, find_uv, uv_version

    try:
        uv = find_uv()
    except UvNotFoundError as exc:
        return DoctorCheck(
            "uv",
            "warning",
            f"{exc} (the Harbor backend and `eval run --isolated` need it)",
            INSTALL_HINT,
        )
    try:
        return DoctorCheck("uv", "ok", f"{uv_version(uv)} ({uv})")
    except OSError as exc:
        return DoctorCheck("uv", "error", str(exc), f"reinstall uv: {INSTALL_HINT}")


def check_environment() -> list[DoctorCheck]:
    checks: list[DoctorCheck] = []
    version = ".".join(str(v) for v in sys.version_info[:3])
    checks.append(DoctorCheck("python", "ok", f"{version} ({sys.executable})"))
    checks.append(check_uv())
    for dist in ("osmosis-core", "osmosis-cli"):
        checks.append(DoctorCheck(dist, "ok", _version(dist) or "not installed"))
    fastapi, uvicorn = _version("fastapi"), _version("uvicorn")
    if fastapi and uvicorn:
        checks.append(DoctorCheck("server extra", "ok", f"fastapi {fastapi}, uvicorn {uvicorn}"))
    else:
        checks.append(
            DoctorCheck(
                "server extra",
                "warning",
                "fastapi/uvicorn not installed: `rollout serve` and local evals need them",
                "pip install 'osmosis-ai[server]'",
            )
        )
    for dist, (framework, extra) in INTEGRATIONS.items():
        ours, theirs = _version(dist), _version(framework)
        if ours and theirs:
            checks.append(DoctorCheck(dist, "ok", f"{ours} with {framework} {theirs}"))
        elif ours or theirs:
            have = f"{dist} {ours}" if ours else f"{framework} {theirs}"
            checks.append(
                DoctorCheck(
                    dist,
                    "warning",
                    f"only {have} is installed; the integration needs both",
                    f"pip install 'osmosis-ai[{extra}]'",
                )
            )
        else:
            checks.append(
                DoctorCheck(
                    dist, "info", f"not installed (optional: pip install 'osmosis-ai[{extra}]')"
                )
            )
    return checks
