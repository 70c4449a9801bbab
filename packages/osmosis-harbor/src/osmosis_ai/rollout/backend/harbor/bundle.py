"""The rollout project as a content-addressed wheel that the sandbox installs.

The wheel holds one package, ``osmosis_bundle_<digest>``:

- ``project/``: the rollout project's files (its modules import exactly as on the host, because
  the runner puts this directory first on ``sys.path``);
- ``spec.json``: import paths of the workflow and grader and how to rebuild their configs;
- ``runner.py`` and ``_sandbox_paths.py`` (copies of :mod:`.runner` and of the file
  contract it imports) and ``__main__.py``: ``python -m <package> agent|grade``.

Its requirements are the project's ``[project].dependencies``. The digest covers the files, the
spec and the runner, so an unchanged project is never rebuilt; the cache
(``<osmosis home>/cache/harbor-bundles``) is pruned by age and total size after each build.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osmosis_ai.errors import BackendError
from osmosis_ai.rollout.integrations.spi import iter_project_files

from . import _sandbox_paths
from . import runner as runner_module

logger = logging.getLogger(__name__)

BUNDLE_FORMAT = "1"
DEFAULT_MAX_AGE_SEC = 7 * 24 * 3600.0
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
MAX_PROJECT_BYTES = 64 * 1024 * 1024


class BundleError(BackendError):
    """The rollout project could not be packaged; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Bundle:
    """A built bundle: the wheel on the host and the package to run in the sandbox."""

    wheel: Path
    package: str
    digest: str


def project_files(code_dir: Path, exclude: tuple[Path, ...] = ()) -> list[Path]:
    """Regular files of the project, sorted, without caches, venvs, VCS data or symlinks."""
    files: list[Path] = []
    total = 0
    for path in iter_project_files(code_dir, exclude=exclude):
        total += path.stat().st_size
        if total > MAX_PROJECT_BYTES:
            raise BundleError(
                f"the rollout project {code_dir} is larger than "
                f"{MAX_PROJECT_BYTES // (1024 * 1024)} MiB; move data out of it or pass "
                "code_dir= pointing at the code only"
            )
        files.append(path)
    return files


def project_dependencies(code_dir: Path) -> list[str]:
    pyproject = code_dir / "pyproject.toml"
    if not pyproject.is_file():
        return []
    try:
        data = tomllib.loads(pyproject.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise BundleError(f"{pyproject} is not valid TOML: {exc}") from exc
    deps = data.get("project", {}).get("dependencies", [])
    return [str(d) for d in deps]


def bundle_digest(code_dir: Path, files: list[Path], spec: dict[str, Any]) -> str:
    h = hashlib.sha256()
    h.update(f"osmosis-bundle-{BUNDLE_FORMAT}\0".encode())
    h.update(json.dumps(spec, sort_keys=True).encode())
    for source in _runner_files():
        h.update(source.read_bytes())
    for path in files:
        h.update(b"\0" + path.relative_to(code_dir).as_posix().encode() + b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


def _runner_files() -> tuple[Path, ...]:
    """The runner and the sandbox-path module it imports, copied into every bundle."""
    return (Path(runner_module.__file__), Path(_sandbox_paths.__file__))


def osmosis_cache_dir() -> Path:
    """``$OSMOSIS_HOME/cache`` (default ``~/.osmosis/cache``), shared across runs (core owns it)."""
    from osmosis_ai.rollout.integrations.spi import osmosis_cache_dir as cache_dir

    return cache_dir()


def default_cache_dir() -> Path:
    return osmosis_cache_dir() / "harbor-bundles"


def build_bundle(
    code_dir: Path,
    spec: dict[str, Any],
    *,
    cache_dir: Path | None = None,
    exclude: tuple[Path, ...] = (),
    max_age_sec: float = DEFAULT_MAX_AGE_SEC,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Bundle:
    """Build (or reuse) the wheel for ``code_dir``; blocking, so call it in a thread."""
    code_dir = code_dir.resolve()
    if not code_dir.is_dir():
        raise BundleError(f"code_dir {code_dir} is not a directory")
    cache = cache_dir or default_cache_dir()
    files = project_files(code_dir, exclude)
    deps = project_dependencies(code_dir)
    digest = bundle_digest(code_dir, files, {**spec, "dependencies": deps})
    package = f"osmosis_bundle_{digest[:16]}"
    entry = cache / digest[:32]
    wheels = sorted(entry.glob("*.whl")) if entry.is_dir() else []
    if wheels:
        os.utime(entry)  # most recently used: pruning removes the oldest first
        return Bundle(wheel=wheels[0], package=package, digest=digest)

    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="osmosis-bundle-", dir=cache) as tmp:
        stage = Path(tmp) / "stage"
        pkg_dir = stage / package
        project_dir = pkg_dir / "project"
        for path in files:
            target = project_dir / path.relative_to(code_dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        pkg_dir.mkdir(parents=True, exist_ok=True)
        (pkg_dir / "__init__.py").write_text('"""A rollout project bundled by osmosis-harbor."""\n')
        for source in _runner_files():
            shutil.copy2(source, pkg_dir / source.name)
        (pkg_dir / "__main__.py").write_text(
            "import sys\n\nfrom .runner import main\n\nsys.exit(main())\n"
        )
        (pkg_dir / runner_module.SPEC_FILE).write_text(json.dumps(spec, indent=2))
        (stage / "pyproject.toml").write_text(_pyproject(package, digest, deps))
        out = Path(tmp) / "out"
        _uv_build(stage, out)
        built = sorted(out.glob("*.whl"))
        if not built:
            raise BundleError(f"uv build produced no wheel for {code_dir}")
        staged_entry = Path(tmp) / "entry"
        staged_entry.mkdir()
        shutil.move(built[0], staged_entry / built[0].name)
        try:
            staged_entry.rename(entry)
        except OSError:
            # Another process built the same digest first; theirs is identical.
            if not any(entry.glob("*.whl")):
                raise
    prune_cache(cache, max_age_sec=max_age_sec, max_bytes=max_bytes, keep=entry)
    return Bundle(wheel=sorted(entry.glob("*.whl"))[0], package=package, digest=digest)


def _pyproject(package: str, digest: str, deps: list[str]) -> str:
    dist = package.replace("_", "-")
    return (
        "[project]\n"
        f'name = "{dist}"\n'
        'version = "0"\n'
        f'description = "osmosis rollout bundle {digest[:16]}"\n'
        'requires-python = ">=3.12"\n'
        f"dependencies = {json.dumps(deps)}\n\n"
        "[build-system]\n"
        'requires = ["hatchling>=1.26"]\n'
        'build-backend = "hatchling.build"\n\n'
        "[tool.hatch.build.targets.wheel]\n"
        f'packages = ["{package}"]\n'
    )


def _uv() -> str:
    from osmosis_ai.rollout.integrations.spi import UvNotFoundError, find_uv

    try:
        return find_uv()
    except UvNotFoundError as exc:
        raise BundleError(
            f"building the rollout bundle needs uv: {exc}; or pass bundle= with a prebuilt wheel"
        ) from exc


def _uv_build(stage: Path, out: Path) -> None:
    uv = _uv()
    base = [uv, "build", "--wheel", "--quiet", "--out-dir", str(out), str(stage)]
    # Offline first: the build backend is normally in uv's cache already.
    for extra in (["--offline"], []):
        proc = subprocess.run(
            [*base, *extra], capture_output=True, text=True, check=False, env=_build_env()
        )
        if proc.returncode == 0:
            return
    raise BundleError(f"uv build failed for the rollout bundle: {proc.stderr.strip()[-2000:]}")


def _build_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("UV_PYTHON", sys.executable)
    env.pop("VIRTUAL_ENV", None)
    return env


def prune_cache(
    cache: Path, *, max_age_sec: float, max_bytes: int, keep: Path | None = None
) -> list[Path]:
    """Delete bundles unused for ``max_age_sec``, then the oldest until under ``max_bytes``."""
    if not cache.is_dir():
        return []
    now = time.time()
    entries: list[tuple[float, int, Path]] = []
    for entry in cache.iterdir():
        if not entry.is_dir() or entry.name.startswith("osmosis-bundle-"):
            continue
        size = sum(f.stat().st_size for f in entry.glob("*") if f.is_file())
        entries.append((entry.stat().st_mtime, size, entry))
    entries.sort()
    removed: list[Path] = []
    total = sum(size for _, size, _ in entries)
    for mtime, size, entry in entries:
        if keep is not None and entry == keep:
            continue
        if now - mtime > max_age_sec or total > max_bytes:
            shutil.rmtree(entry, ignore_errors=True)
            total -= size
            removed.append(entry)
    return removed
