"""What the platform needs to know about the workspace repository (it clones ``origin``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any


def _git(workspace: Path, *args: str) -> str | None:
    try:
        completed = subprocess.run(
            ["git", "-C", str(workspace), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return completed.stdout.strip() if completed.returncode == 0 else None


def describe_repository(workspace: Path) -> dict[str, Any]:
    """``{remote_url, branch, commit_sha, dirty}``; unknown values are ``None``."""
    if shutil.which("git") is None or not (workspace / ".git").exists():
        return {"remote_url": None, "branch": None, "commit_sha": None, "dirty": None}
    status = _git(workspace, "status", "--porcelain")
    return {
        "remote_url": _git(workspace, "remote", "get-url", "origin"),
        "branch": _git(workspace, "symbolic-ref", "--short", "-q", "HEAD"),
        "commit_sha": _git(workspace, "rev-parse", "-q", "--verify", "HEAD"),
        "dirty": bool(status) if status is not None else None,
    }
