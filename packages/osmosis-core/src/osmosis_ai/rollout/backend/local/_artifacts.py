"""The per-rollout artifacts folder, ``<home>/<rollout_id>/artifacts/``, created on first use.

Creating two directories costs about 60 µs of CPU, a noticeable share of a no-op rollout's
budget, and most rollouts never write an artifact. :class:`ArtifactsDir` is a real
:class:`~pathlib.Path` that creates itself the moment it is used as a filesystem path
(``open(ctx.artifacts_dir / "x")``, ``ctx.artifacts_dir.iterdir()``, ``os.fspath(...)``,
``str(...)``), so rollout code sees an existing directory and idle rollouts cost nothing.
A directory that cannot be created raises ``OSError`` at that point, naming the path.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Self


class ArtifactsDir(Path):
    """A directory path that ``mkdir -p``'s itself on first filesystem use."""

    _created: bool = False

    def ensure(self) -> Self:
        if not self._created:
            os.makedirs(super().__str__(), exist_ok=True)
            self._created = True
        return self

    def __str__(self) -> str:
        self.ensure()
        return super().__str__()

    def __fspath__(self) -> str:
        return str(self)

    def with_segments(self, *pathsegments: Any) -> Path:
        # Deriving a child (``dir / "file"``) means the caller is about to use the folder.
        self.ensure()
        return Path(*pathsegments)

    def __repr__(self) -> str:
        return f"ArtifactsDir({super().__str__()!r})"


def artifacts_dir(root: Path, rollout_id: str) -> ArtifactsDir:
    """``<root>/<rollout_id>/artifacts`` (``rollout_id`` is already a validated path segment)."""
    return ArtifactsDir(root, rollout_id, "artifacts")
