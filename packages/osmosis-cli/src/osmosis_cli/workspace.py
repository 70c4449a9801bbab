"""Where the user's osmosis workspace is and whether it has the expected layout.

A workspace is the top of the enclosing git worktree (the platform clones that repository), or,
outside git, the nearest folder that already has the osmosis layout. It holds ``rollouts/``,
``configs/eval/``, ``configs/training/`` and ``data/``.
"""

from __future__ import annotations

from pathlib import Path

from osmosis_cli.errors import CLIError, CLIErrorCode

REQUIRED_DIRS: tuple[str, ...] = ("rollouts", "configs/eval", "configs/training", "data")


def find_workspace(start: Path | None = None) -> Path | None:
    """The workspace containing ``start`` (default: the current directory), or ``None``."""
    here = (start or Path.cwd()).resolve()
    candidates = [here, *here.parents]
    for folder in candidates:
        if (folder / ".git").exists():
            return folder
    for folder in candidates:
        if (folder / "rollouts").is_dir() and (folder / "configs").is_dir():
            return folder
    return None


def require_workspace(start: Path | None = None) -> Path:
    root = find_workspace(start)
    if root is None:
        where = (start or Path.cwd()).resolve()
        raise CLIError(
            CLIErrorCode.WORKSPACE_REQUIRED,
            f"{where} is not inside an osmosis workspace (a git repository or a folder with "
            "rollouts/ and configs/). Create one with `osmosis init` or run `git init` first.",
            details={"path": str(where)},
        )
    return root


def missing_dirs(root: Path) -> list[str]:
    return [name for name in REQUIRED_DIRS if not (root / name).is_dir()]


def require_layout(root: Path) -> None:
    """Fail with the list of missing folders and how to create them."""
    missing = missing_dirs(root)
    if missing:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"The workspace {root} is missing {', '.join(m + '/' for m in missing)}. "
            "Run `osmosis doctor --fix` (or `osmosis init`) to create them.",
            details={"missing": missing, "workspace": str(root)},
        )


def relative(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when inside it (for messages), else absolute."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
