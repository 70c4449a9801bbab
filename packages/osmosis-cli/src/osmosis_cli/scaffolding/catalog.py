"""The template catalog shipped with the CLI (no network).

Templates live in the repository's top-level ``templates/`` folder and are copied into the
wheel as ``osmosis_cli/templates``. A template is a folder ``templates/<name>/`` that mirrors
the workspace layout (``rollouts/<name>/``, ``configs/eval/<name>.toml``, ...) plus a
``template.toml`` manifest. Folders starting with ``_`` hold shared files (the dataset) and the
workspace skeleton; they are not templates.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from osmosis_cli.errors import CLIError, CLIErrorCode

TEMPLATE_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
MANIFEST = "template.toml"
SKIPPED_NAMES = frozenset({"__pycache__", ".venv", ".pytest_cache", ".ruff_cache", MANIFEST})
SKIPPED_SUFFIXES = (".pyc", ".pyo")


def templates_root() -> Path:
    """The folder holding the templates: ``OSMOSIS_TEMPLATES_DIR``, the wheel, or the repo."""
    override = os.environ.get("OSMOSIS_TEMPLATES_DIR")
    if override:
        return Path(override)
    packaged = Path(__file__).resolve().parent.parent / "templates"
    if packaged.is_dir():
        return packaged
    # Editable install from the repository: packages/osmosis-cli/src/osmosis_cli/scaffolding
    repo = Path(__file__).resolve().parents[5] / "templates"
    if repo.is_dir():
        return repo
    raise CLIError(
        CLIErrorCode.INTERNAL,
        "The template catalog is missing from this osmosis-cli installation; reinstall it.",
        details={"looked_in": [str(packaged), str(repo)]},
    )


@dataclass(frozen=True)
class Template:
    name: str
    path: Path
    description: str
    backend: str
    framework: str
    shared: tuple[str, ...] = field(default=())

    def files(self) -> list[tuple[str, Path]]:
        """``(workspace-relative destination, source file)`` for every file it writes."""
        out = [(rel, src) for rel, src in iter_files(self.path)]
        shared_root = self.path.parent / "_shared"
        for rel in self.shared:
            out.append((rel, shared_root / rel))
        return sorted(out)

    @property
    def owned_dir(self) -> str:
        """The folder the template owns outright (replaced as a whole by ``--force``)."""
        return f"rollouts/{self.name}"

    def summary(self) -> dict[str, str]:
        return {
            "name": self.name,
            "description": self.description,
            "backend": self.backend,
            "framework": self.framework,
        }


def iter_files(root: Path) -> list[tuple[str, Path]]:
    """Regular files below ``root`` (relative POSIX path, path), skipping caches and venvs."""
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_NAMES)
        for filename in sorted(filenames):
            if filename in SKIPPED_NAMES or filename.endswith(SKIPPED_SUFFIXES):
                continue
            path = Path(dirpath) / filename
            if path.is_symlink() or not path.is_file():
                continue
            found.append((path.relative_to(root).as_posix(), path))
    return found


def list_templates() -> list[Template]:
    root = templates_root()
    templates = []
    for entry in sorted(root.iterdir()):
        if entry.is_dir() and TEMPLATE_NAME.match(entry.name) and (entry / MANIFEST).is_file():
            templates.append(_load(entry))
    return templates


def get_template(name: str) -> Template:
    """The template called ``name``; a bad or unknown name is a clear error."""
    available = [t.name for t in list_templates()]
    if not TEMPLATE_NAME.match(name):
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"Invalid template name {name!r}: names use lower-case letters, digits and '-'. "
            f"Available templates: {', '.join(available)}.",
            details={"name": name, "available": available},
        )
    if name not in available:
        from difflib import get_close_matches

        close = get_close_matches(name, available, n=1, cutoff=0.5)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise CLIError(
            CLIErrorCode.NOT_FOUND,
            f"Template '{name}' not found.{hint} Available templates: {', '.join(available)}.",
            details={"name": name, "available": available},
        )
    return _load(templates_root() / name)


def _load(folder: Path) -> Template:
    try:
        manifest = tomllib.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CLIError(
            CLIErrorCode.INTERNAL,
            f"Template {folder.name} has an unreadable {MANIFEST}: {exc}",
        ) from exc
    return Template(
        name=folder.name,
        path=folder,
        description=str(manifest.get("description", "")),
        backend=str(manifest.get("backend", "")),
        framework=str(manifest.get("framework", "")),
        shared=tuple(str(s) for s in manifest.get("shared", [])),
    )
