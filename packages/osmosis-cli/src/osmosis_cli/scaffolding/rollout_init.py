"""``osmosis rollout init NAME``: a new rollout with a workflow and a grader to fill in."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.scaffolding.catalog import iter_files, templates_root
from osmosis_cli.scaffolding.writer import WritePlan, WriteResult, apply_plan

ROLLOUT_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
RESERVED_NAMES = frozenset({"default"})


def validate_rollout_name(name: str) -> str:
    if not ROLLOUT_NAME.match(name):
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"Invalid rollout name {name!r}: start with a lower-case letter and use only "
            "lower-case letters, digits and '-' (e.g. my-agent).",
            details={"name": name, "pattern": ROLLOUT_NAME.pattern},
        )
    if name in RESERVED_NAMES:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"{name!r} is reserved (configs/*/default.toml); choose another rollout name.",
            details={"name": name},
        )
    return name


def package_name(name: str) -> str:
    return name.replace("-", "_")


@dataclass
class ScaffoldResult:
    name: str
    workspace: Path
    result: WriteResult

    def resource(self) -> dict[str, object]:
        return {
            "name": self.name,
            "workspace_directory": str(self.workspace),
            "rollout_dir": f"rollouts/{self.name}",
            "configs": {
                "eval": f"configs/eval/{self.name}.toml",
                "training": f"configs/training/{self.name}.toml",
            },
            "files": self.result.written,
        }

    def next_steps(self) -> list[str]:
        return [
            f"edit rollouts/{self.name}/{package_name(self.name)}/workflow.py and grader.py",
            f"add a dataset: data/{self.name}.jsonl (system_prompt, user_prompt, ground_truth)",
            f"osmosis rollout validate configs/eval/{self.name}.toml",
            f"osmosis eval run configs/eval/{self.name}.toml",
        ]


def render_scaffold(name: str) -> dict[str, bytes]:
    """Workspace-relative path -> content, with the name and package substituted."""
    package = package_name(name)
    root = templates_root() / "_scaffold"
    files: dict[str, bytes] = {}
    for rel, src in iter_files(root):
        if rel == "README.md":
            continue
        if rel.startswith("rollout/"):
            rel = f"rollouts/{name}/" + rel.removeprefix("rollout/")
        dest = rel.replace("__package__", package).replace("__name__", name).removesuffix(".tpl")
        text = src.read_text(encoding="utf-8")
        files[dest] = text.replace("{{name}}", name).replace("{{package}}", package).encode()
    return files


def init_rollout(name: str, workspace: Path, *, force: bool) -> ScaffoldResult:
    validate_rollout_name(name)
    plan = WritePlan(
        workspace=workspace, files=render_scaffold(name), owned_dirs=(f"rollouts/{name}",)
    )
    # A second `rollout init` of the same name is a conflict even when the files are unchanged
    # scaffold copies: the folder belongs to a rollout someone may be editing.
    existing = workspace / "rollouts" / name
    if existing.exists() and not force:
        raise CLIError(
            CLIErrorCode.CONFLICT,
            f"rollouts/{name} already exists. Choose another name, or re-run with --force to "
            "replace it and its configs.",
            details={"conflicts": [f"rollouts/{name}"]},
        )
    result = apply_plan(plan, force=force, what=f"Rollout '{name}'")
    return ScaffoldResult(name=name, workspace=workspace, result=result)
