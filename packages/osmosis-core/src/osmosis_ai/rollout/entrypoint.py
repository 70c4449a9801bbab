"""Load a rollout's entrypoint (``rollouts/<name>/main.py``) and its ``app``: the one loader.

``osmosis rollout validate`` (the import probe), ``osmosis rollout serve`` and ``osmosis eval
run`` (its rollout-server child) all import an entrypoint through :func:`load_rollout_app` /
:func:`import_entrypoint`, so they agree on whether a ``main.py`` imports and what it exposes.

How an entrypoint is imported:

* as a submodule of a synthetic package named after the rollout folder
  (``_osmosis_rollout_<hash>.main``), so it is never ``__main__`` (its
  ``if __name__ == "__main__":`` block, which usually starts a server, does not run) and relative
  imports (``from .tools import x``) work;
* with the rollout folder (and the entrypoint's own folder) first on ``sys.path``, as
  ``python main.py`` would have them, so ``import tools`` works too.

Failures raise :class:`RolloutEntrypointError` with what went wrong, where (the innermost frame in
the rollout's own files), the missing module if any, and the formatted traceback.

This module imports only the standard library and :mod:`osmosis_ai.errors`: it runs in the eval's
server child, which may live in the rollout's own environment (``--isolated``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import sys
import traceback
import types
from pathlib import Path
from typing import Any

from osmosis_ai._util.tracebacks import traceback_from
from osmosis_ai.errors import ConfigurationError

__all__ = ["RolloutEntrypointError", "import_entrypoint", "load_rollout_app"]


class RolloutEntrypointError(ConfigurationError):
    """The entrypoint could not be imported, or defines no ``app``.

    ``kind`` is ``"module_not_found"`` (a dependency is not installed: ``missing_module`` names it),
    ``"import_error"`` (the rollout's code raised while importing: ``file``/``line`` point at the
    innermost frame in the rollout's files) or ``"no_app"``.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        error_type: str | None = None,
        missing_module: str | None = None,
        file: str | None = None,
        line: int | None = None,
        traceback_text: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.error_type = error_type
        self.missing_module = missing_module
        self.file = file
        self.line = line
        self.traceback_text = traceback_text


def _package_name(rollout_dir: Path) -> str:
    digest = hashlib.sha256(str(rollout_dir).encode()).hexdigest()[:16]
    return f"_osmosis_rollout_{digest}"


def _ensure_package(rollout_dir: Path) -> str:
    package = _package_name(rollout_dir)
    if package in sys.modules:
        return package
    init = rollout_dir / "__init__.py"
    if init.is_file():
        spec = importlib.util.spec_from_file_location(
            package, init, submodule_search_locations=[str(rollout_dir)]
        )
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {init}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[package] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(package, None)
            raise
    else:
        module = types.ModuleType(package)
        module.__path__ = [str(rollout_dir)]
        sys.modules[package] = module
    return package


def _location(exc: BaseException, rollout_dir: Path) -> tuple[str | None, int | None]:
    """The innermost frame in the rollout's own files (else the innermost frame)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return exc.filename, exc.lineno
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if f.filename.startswith(str(rollout_dir))]
    chosen = (own or frames or [None])[-1]
    if chosen is None:
        return None, None
    return chosen.filename, chosen.lineno


def _import_failed(
    exc: BaseException, rollout_dir: Path, entrypoint: Path
) -> RolloutEntrypointError:
    filename, line = _location(exc, rollout_dir)
    inside = str(rollout_dir)  # the traceback starts at the rollout's own first frame
    text = traceback_from(exc, lambda path: path.startswith(inside))[-4000:]
    detail = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    where = f"{filename}:{line}: " if filename and line else ""
    if isinstance(exc, ModuleNotFoundError):
        return RolloutEntrypointError(
            f"importing {entrypoint.name} failed: {where}{detail}. Install the rollout's "
            f"dependencies (e.g. `uv pip install -e {rollout_dir}`).",
            kind="module_not_found",
            error_type=type(exc).__name__,
            missing_module=exc.name,
            file=filename,
            line=line,
            traceback_text=text,
        )
    return RolloutEntrypointError(
        f"importing {entrypoint.name} failed: {where}{type(exc).__name__}: {detail}",
        kind="import_error",
        error_type=type(exc).__name__,
        file=filename,
        line=line,
        traceback_text=text,
    )


def import_entrypoint(rollout_dir: str | Path, entrypoint: str | Path) -> types.ModuleType:
    """Import ``entrypoint`` (a file inside ``rollout_dir``, absolute or relative to it).

    Raises :class:`RolloutEntrypointError` when the import fails, including when the rollout
    calls ``sys.exit()`` at import time; ``KeyboardInterrupt`` propagates.
    """
    root = Path(rollout_dir).resolve()
    path = Path(entrypoint)
    path = (path if path.is_absolute() else root / path).resolve()
    try:
        dotted = ".".join(path.relative_to(root).with_suffix("").parts)
    except ValueError:
        raise RolloutEntrypointError(
            f"the entrypoint {path} is outside the rollout folder {root}; it must be a file "
            "inside it",
            kind="import_error",
        ) from None
    if not path.is_file():
        raise RolloutEntrypointError(f"the entrypoint {path} does not exist", kind="import_error")
    for folder in (str(path.parent), str(root)):
        if folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)
    try:
        package = _ensure_package(root)
        return importlib.import_module(f"{package}.{dotted}")
    except (Exception, SystemExit) as exc:
        raise _import_failed(exc, root, path) from exc


def load_rollout_app(
    rollout_dir: str | Path, entrypoint: str | Path = "main.py", attribute: str = "app"
) -> Any:
    """Import the entrypoint and return its ``app`` (the ASGI app ``create_rollout_server`` made).

    A module without ``app`` but with a zero-argument ``create_app()`` gets that called. Raises
    :class:`RolloutEntrypointError` (``kind="no_app"`` when neither exists).
    """
    module = import_entrypoint(rollout_dir, entrypoint)
    app = getattr(module, attribute, None)
    if app is None and attribute == "app" and callable(getattr(module, "create_app", None)):
        app = module.create_app()
    if app is None:
        name = Path(entrypoint).name
        raise RolloutEntrypointError(
            f"{name} has no `{attribute}`; define `{attribute} = create_rollout_server("
            "backend=...)` at module level"
            + (" (or a zero-argument `create_app()` returning it)" if attribute == "app" else ""),
            kind="no_app",
        )
    _record_entry(app, rollout_dir, entrypoint, attribute)
    return app


def _record_entry(
    app: Any, rollout_dir: str | Path, entrypoint: str | Path, attribute: str
) -> None:
    """Note where ``app`` came from, so worker processes (``serve(app, workers=N)``) can load
    it the same way."""
    root = Path(rollout_dir).resolve()
    path = Path(entrypoint)
    entry = {
        "kind": "entrypoint",
        "rollout_dir": str(root),
        "target": str((path if path.is_absolute() else root / path).resolve()),
        "attribute": attribute,
    }
    with contextlib.suppress(AttributeError):  # not an app made by create_rollout_server
        app.state.osmosis_rollout_entry = entry


#: Environment of a process that builds its app with :func:`app_from_env` (``rollout serve --reload``).
ENV_ROLLOUT_DIR = "_OSMOSIS_SERVE_ROLLOUT_DIR"
ENV_ENTRYPOINT = "_OSMOSIS_SERVE_ENTRYPOINT"
ENV_ATTRIBUTE = "_OSMOSIS_SERVE_ATTRIBUTE"


def app_from_env() -> Any:
    """uvicorn ``--factory`` target: :func:`load_rollout_app` with the arguments in the environment.

    ``osmosis rollout serve --reload`` runs ``osmosis_ai.rollout.entrypoint:app_from_env`` in the
    worker uvicorn restarts on changes, so a reloaded app is imported exactly as without reload.
    """
    import os

    return load_rollout_app(
        os.environ[ENV_ROLLOUT_DIR],
        os.environ[ENV_ENTRYPOINT],
        os.environ.get(ENV_ATTRIBUTE, "app"),
    )
