"""The files of a rollout project: what its code digest covers and what a sandbox bundle ships.

Virtual environments, VCS data, caches, build output, ``*.egg-info`` folders, compiled files and
symlinks are left out: they change without the rollout's behaviour changing (or, for symlinks,
may point outside the project).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from pathlib import Path

EXCLUDED_DIRS = frozenset(
    {
        ".venv",
        "venv",
        "__pycache__",
        ".git",
        ".hg",
        ".osmosis",
        ".nox",
        ".tox",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        "node_modules",
        "dist",
        "build",
    }
)
EXCLUDED_SUFFIXES = (".pyc", ".pyo", ".egg-info", ".whl")


def iter_project_files(
    root: Path, *, exclude: Collection[Path] = (), skip_names: Collection[str] = ()
) -> Iterator[Path]:
    """Regular files below ``root`` in a stable (sorted) order.

    ``exclude``: folders to leave out (e.g. an output folder inside the project);
    ``skip_names``: file names to leave out wherever they are (e.g. ``uv.lock``).
    """
    excluded = {p.resolve() for p in exclude}
    for dirpath, dirnames, filenames in os.walk(root):
        current = Path(dirpath)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in EXCLUDED_DIRS
            and not d.endswith(EXCLUDED_SUFFIXES)
            and not (current / d).is_symlink()
            and (current / d).resolve() not in excluded
        )
        for name in sorted(filenames):
            path = current / name
            if name in skip_names or name.endswith(EXCLUDED_SUFFIXES):
                continue
            if path.is_symlink() or not path.is_file():
                continue
            yield path


def files_digest(
    root: Path, *, exclude: Collection[Path] = (), skip_names: Collection[str] = ()
) -> str:
    """sha256 (hex) over the relative paths and bytes of :func:`iter_project_files`'s files.

    The one content digest of a folder: a rollout's source (the eval's ``source_digest``) and a
    Harbor task directory are both digested this way.
    """
    import hashlib

    digest = hashlib.sha256()
    for path in iter_project_files(root, exclude=exclude, skip_names=skip_names):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()
