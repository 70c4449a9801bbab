"""Where the user's osmosis workspace is and whether it has the expected layout.

A workspace holds ``rollouts/``, ``configs/eval/``, ``configs/training/`` and ``data/``. It is
the nearest folder, going up from the current one, that either has that layout (``rollouts/``
and ``configs/``) or is the top of a git worktree. Usually both are the same folder (the
platform clones the repository and expects the layout at its root); a workspace made with
``osmosis init sub`` inside a larger repository is found too.
"""

from __future__ import annotations

from pathlib import Path

from osmosis_cli.errors import CLIError, CLIErrorCode

REQUIRED_DIRS: tuple[str, ...] = ("rollouts", "configs/eval", "configs/training", "data")


def find_workspace(start: Path | None = None) -> Path | None:
    """The workspace containing ``start`` (default: the current directory), or ``None``."""
    here = (start or Path.cwd()).resolve()
    for folder in [here, *here.parents]:
        has_layout = (folder / "rollouts").is_dir() and (folder / "configs").is_dir()
        if has_layout or (folder / ".git").exists():
            return folder
    return None


def require_workspace(
    start: Path | None = None,
    *,
    hint: str = "Create one with `osmosis init` or run `git init` first.",
) -> Path:
    """:func:`find_workspace`, or a ``WORKSPACE_REQUIRED`` error ending with ``hint``."""
    root = find_workspace(start)
    if root is None:
        where = (start or Path.cwd()).resolve()
        raise CLIError(
            CLIErrorCode.WORKSPACE_REQUIRED,
            f"{where} is not inside an osmosis workspace (a git repository or a folder with "
            f"rollouts/ and configs/). {hint}",
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
