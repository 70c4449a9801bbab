"""Keep rollout secrets out of trial directories, and move artifacts where osmosis expects them.

Harbor redacts key-like ``env`` values in the trial's ``config.json`` and scrubs them from the
trial dir when the trial ends, but it writes agent ``kwargs`` verbatim (a native agent's
``llm_kwargs.api_key``, for example). :func:`scrub_tree` replaces every known secret in every
text file of a trial dir; the backend runs it on ``config.json`` as soon as the trial starts
and on the whole tree when it ends.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from osmosis_ai.rollout.integrations.spi import Redactor, write_atomic


def scrub_file(path: Path, secrets: Redactor) -> bool:
    """Replace ``secrets`` in one regular file; ``True`` if it changed."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        data = path.read_bytes()
    except OSError:
        return False
    scrubbed = secrets.redact_bytes(data)
    if scrubbed == data:
        return False
    write_atomic(path, scrubbed)
    return True


def scrub_tree(root: Path, secrets: Iterable[str | None]) -> int:
    """Scrub every regular file under ``root`` (binary files too); returns files changed."""
    redactor = Redactor(secrets)
    if not redactor.secrets or not root.exists():
        return 0
    changed = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            changed += scrub_file(Path(dirpath) / name, redactor)
    return changed


def scrub_paths(paths: Iterable[Path], secrets: Iterable[str | None]) -> int:
    redactor = Redactor(secrets)
    return sum(scrub_file(p, redactor) for p in paths) if redactor.secrets else 0


def relocate_artifacts(trial_artifacts: Path, destination: Path) -> int:
    """Copy regular files the rollout wrote to ``/logs/artifacts`` into ``destination``.

    Harbor mirrors the sandbox directory under ``<trial>/artifacts/logs/artifacts``. Symlinks
    are never followed; existing files are kept (additive merge). Returns files copied.
    """
    source = trial_artifacts / "logs" / "artifacts"
    if not source.is_dir():
        return 0
    copied = 0
    for dirpath, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if not (Path(dirpath) / d).is_symlink()]
        for name in files:
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                continue
            target = destination / path.relative_to(source)
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
            copied += 1
    return copied
