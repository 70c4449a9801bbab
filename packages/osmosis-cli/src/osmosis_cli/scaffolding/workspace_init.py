"""``osmosis init [DIR]``: the workspace skeleton, never overwriting anything.

Creates ``rollouts/``, ``configs/eval/``, ``configs/training/`` and ``data/`` (each with a
``.gitkeep`` so the platform's clone has them), a README, ``AGENTS.md``, ``CLAUDE.md``,
``.claude/settings.json``, the agent skills under ``.agents/skills/`` (``.claude/skills`` links
to them; see :mod:`osmosis_cli.scaffolding.skills`), a ``.gitignore``, and runs ``git init`` when
the folder is not in a repository yet. Files that already exist are kept as they are.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from osmosis_cli.scaffolding.catalog import iter_files, templates_root
from osmosis_cli.scaffolding.skills import install_skills
from osmosis_cli.workspace import REQUIRED_DIRS

#: Template files written under another name in the workspace.
RENAMED = {"gitignore": ".gitignore", "claude-settings.json": ".claude/settings.json"}


@dataclass
class InitResult:
    workspace: Path
    created: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    git_initialized: bool = False
    claude_skills: str | None = None

    def resource(self) -> dict[str, object]:
        return {
            "workspace_directory": str(self.workspace),
            "created": self.created,
            "kept": self.kept,
            "git_initialized": self.git_initialized,
            "claude_skills": self.claude_skills,
        }


def workspace_files() -> dict[str, bytes]:
    """Workspace-relative path -> content of every skeleton file but the skills (written by
    :func:`osmosis_cli.scaffolding.skills.install_skills`)."""
    root = templates_root() / "_workspace"
    files: dict[str, bytes] = {}
    for rel, src in iter_files(root):
        if rel.startswith("skills/"):
            continue
        files[RENAMED.get(rel, rel)] = src.read_bytes()
    for folder in REQUIRED_DIRS:
        files[f"{folder}/.gitkeep"] = b""
    return files


def create_dirs(root: Path, result: InitResult) -> None:
    for folder in REQUIRED_DIRS:
        path = root / folder
        if not path.is_dir():
            path.mkdir(parents=True, exist_ok=True)
            result.created.append(folder + "/")


def init_workspace(root: Path, *, git: bool = True, symlinks: bool = True) -> InitResult:
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
    skills = install_skills(root, symlinks=symlinks)
    result.created += skills.added
    result.claude_skills = skills.claude_skills
    return result


def _inside_git(path: Path) -> bool:
    return any((folder / ".git").exists() for folder in [path, *path.parents])
