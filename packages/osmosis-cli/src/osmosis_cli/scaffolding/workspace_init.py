"""``osmosis init [DIR]``: the workspace skeleton, never overwriting anything.

Creates ``rollouts/``, ``configs/eval/``, ``configs/training/`` and ``data/`` (each with a
``.gitkeep`` so the platform's clone has them), a README, ``AGENTS.md`` and the agent skills
under ``.agents/skills/`` (and ``.claude/skills/``), a ``.gitignore``, and runs ``git init`` when
the folder is not in a repository yet. Files that already exist are kept as they are.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from osmosis_cli.scaffolding.catalog import iter_files, templates_root
from osmosis_cli.workspace import REQUIRED_DIRS

SKILL_ROOTS = (".agents/skills", ".claude/skills")


@dataclass
class InitResult:
    workspace: Path
    created: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    git_initialized: bool = False

    def resource(self) -> dict[str, object]:
        return {
            "workspace_directory": str(self.workspace),
            "created": self.created,
            "kept": self.kept,
            "git_initialized": self.git_initialized,
        }


def workspace_files() -> dict[str, bytes]:
    """Workspace-relative path -> content of every skeleton file."""
    root = templates_root() / "_workspace"
    files: dict[str, bytes] = {}
    for rel, src in iter_files(root):
        content = src.read_bytes()
        if rel.startswith("skills/"):
            for skills in SKILL_ROOTS:
                files[f"{skills}/{rel.removeprefix('skills/')}"] = content
        elif rel == "gitignore":
            files[".gitignore"] = content
        else:
            files[rel] = content
    for folder in REQUIRED_DIRS:
        files[f"{folder}/.gitkeep"] = b""
    return files


def create_dirs(root: Path, result: InitResult) -> None:
    for folder in REQUIRED_DIRS:
        path = root / folder
        if not path.is_dir():
            path.mkdir(parents=True, exist_ok=True)
            result.created.append(folder + "/")


def init_workspace(root: Path, *, git: bool = True) -> InitResult:
    root.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    result = InitResult(workspace=root)
    if git and not _inside_git(root) and shutil.which("git"):
        completed = subprocess.run(
            ["git", "init", "-q", str(root)], capture_output=True, text=True, check=False
        )
        result.git_initialized = completed.returncode == 0
    create_dirs(root, result)
    for rel, content in sorted(workspace_files().items()):
        dest = root / rel
        if dest.exists() or dest.is_symlink():
            if not rel.endswith(".gitkeep"):
                result.kept.append(rel)
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(content)
        if not rel.endswith(".gitkeep"):
            result.created.append(rel)
    return result


def _inside_git(path: Path) -> bool:
    return any((folder / ".git").exists() for folder in [path, *path.parents])
