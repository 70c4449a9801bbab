"""Safe file placement shared by ``template apply``, ``rollout init`` and ``osmosis init``.

All three follow the same rules: every destination must stay inside the workspace (a symlinked
folder cannot redirect writes elsewhere), existing files with different content are conflicts
listed together unless ``--force``, identical files are left alone, and a folder owned by the
thing being written (``rollouts/<name>/``) is replaced as a whole by ``--force``.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from osmosis_ai.atomic_file import write_atomic
from osmosis_cli.errors import CLIError, CLIErrorCode


@dataclass
class WritePlan:
    """Files to place: workspace-relative POSIX path -> content."""

    workspace: Path
    files: dict[str, bytes]
    owned_dirs: Sequence[str] = ()


@dataclass
class WriteResult:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    replaced_dirs: list[str] = field(default_factory=list)


def _inside(path: Path, root: Path) -> bool:
    """Whether ``path`` (existing or not) would land inside ``root`` once symlinks resolve."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        existing.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def find_conflicts(plan: WritePlan) -> list[str]:
    """Paths that already exist with other content (or are not regular files)."""
    conflicts: list[str] = []
    for rel, content in plan.files.items():
        dest = plan.workspace / rel
        if (
            dest.is_symlink()
            or (dest.exists() and not dest.is_file())
            or (dest.is_file() and dest.read_bytes() != content)
        ):
            conflicts.append(rel)
    return sorted(conflicts)


def apply_plan(plan: WritePlan, *, force: bool, what: str) -> WriteResult:
    """Write ``plan``; raise ``CONFLICT`` listing every clashing path unless ``force``."""
    root = plan.workspace
    for rel in plan.files:
        if not _inside((root / rel).parent, root):
            raise CLIError(
                CLIErrorCode.VALIDATION,
                f"Refusing to write {rel}: its folder resolves outside the workspace {root}.",
                details={"path": rel},
            )
    for owned in plan.owned_dirs:
        folder = root / owned
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise CLIError(
                CLIErrorCode.CONFLICT,
                f"{owned} exists but is not a folder (or is a symlink); move it away first.",
                details={"conflicts": [owned]},
            )
    conflicts = find_conflicts(plan)
    if conflicts and not force:
        shown = "\n".join(f"  {c}" for c in conflicts)
        raise CLIError(
            CLIErrorCode.CONFLICT,
            f"{what} would overwrite {len(conflicts)} existing file(s):\n{shown}\n"
            "Re-run with --force to replace them.",
            details={"conflicts": conflicts},
        )
    unreplaceable = [c for c in conflicts if (root / c).is_dir() or (root / c).is_symlink()]
    unreplaceable = [
        c for c in unreplaceable if not any(c.startswith(d + "/") for d in plan.owned_dirs)
    ]
    if unreplaceable:
        raise CLIError(
            CLIErrorCode.CONFLICT,
            "These paths are folders or symlinks and are never replaced: "
            f"{', '.join(unreplaceable)}. Move them away first.",
            details={"conflicts": unreplaceable},
        )
    result = WriteResult()
    if force:
        for owned in plan.owned_dirs:
            folder = root / owned
            if folder.is_dir():
                shutil.rmtree(folder)
                result.replaced_dirs.append(owned)
    for rel, content in sorted(plan.files.items()):
        dest = root / rel
        if dest.is_file() and not dest.is_symlink() and dest.read_bytes() == content:
            result.unchanged.append(rel)
            continue
        if dest.is_symlink():
            dest.unlink()
        _atomic_write(dest, content)
        result.written.append(rel)
    return result


def _atomic_write(dest: Path, content: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(dest, content)


def read_files(files: Mapping[str, Path]) -> dict[str, bytes]:
    return {rel: src.read_bytes() for rel, src in files.items()}
