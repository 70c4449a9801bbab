"""Ship the top-level ``templates/`` folder inside the osmosis-cli sdist and wheel.

Why a hook and not ``force-include``: a wheel is usually built from the sdist, where the
repository's ``../../templates`` no longer exists. The sdist therefore carries the templates as
``templates/`` and the wheel takes them from whichever of the two places exists.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import (  # pyright: ignore[reportMissingImports]
    BuildHookInterface,
)

_SKIPPED = {"__pycache__", ".venv", ".pytest_cache", ".ruff_cache", ".mypy_cache"}


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Adds the templates to the build as forced includes."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        in_repo = (root / ".." / ".." / "templates").resolve()
        in_sdist = root / "templates"
        source = in_repo if in_repo.is_dir() else in_sdist
        if not source.is_dir():
            raise FileNotFoundError(
                f"osmosis-cli templates not found at {in_repo} or {in_sdist}; "
                "build from the repository or from an sdist made by it"
            )
        target = "templates" if self.target_name == "sdist" else "osmosis_cli/templates"
        # File by file, so caches and virtualenvs left by local runs never ship.
        for path in sorted(source.rglob("*")):
            parts = set(path.relative_to(source).parts)
            if not path.is_file() or path.is_symlink() or parts & _SKIPPED or path.suffix == ".pyc":
                continue
            rel = path.relative_to(source).as_posix()
            build_data["force_include"][str(path)] = f"{target}/{rel}"
