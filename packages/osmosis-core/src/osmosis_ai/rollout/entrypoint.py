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

Two shapes of entrypoint are served:

* **module mode** (the fast path): the module defines ``app = create_rollout_server(...)`` (or a
  zero-argument ``create_app()`` returning it);
* **script mode** (what ``osmosis-ai`` 0.3.x's ``osmosis rollout init`` scaffolds and 0.3.x
  ``osmosis eval run`` starts as ``python main.py``): no module-level ``app``; ``main()`` (or the
  ``if __name__ == "__main__":`` block) builds the app and calls ``uvicorn.run(app, host=...,
  port=...)``. The loader runs that code with ``uvicorn.run`` replaced by a stand-in that captures
  the app and returns control, so the app is served by the caller *where the caller binds it*
  (``rollout serve``'s ``--host``/``--port``, eval's loopback port): the script's own ``host``
  (0.3.x scaffolds say ``"0.0.0.0"``) and ``port`` are recorded on ``app.state``, never used.

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
import runpy
import sys
import traceback
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osmosis_ai._util.tracebacks import traceback_from
from osmosis_ai.errors import ConfigurationError

__all__ = [
    "RolloutEntrypointError",
    "ScriptServe",
    "entrypoint_mode",
    "import_entrypoint",
    "load_rollout_app",
]


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


@dataclass(frozen=True)
class ScriptServe:
    """What a script-mode entrypoint asked ``uvicorn.run`` for (recorded, not obeyed).

    ``host``/``port`` are the script's own (0.3.x scaffolds: ``"0.0.0.0"`` and
    ``$_OSMOSIS_ROLLOUT_PORT`` or 8000); ``options`` the other keyword arguments
    (e.g. ``timeout_keep_alive``). ``via`` is ``"main()"`` or ``"__main__"``.
    """

    via: str
    host: str | None = None
    port: int | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def binds_all_interfaces(self) -> bool:
        return self.host in ("0.0.0.0", "::", "")


class _Captured(BaseException):
    """Raised by the ``uvicorn.run`` stand-in; a ``BaseException`` so that a script's
    ``except Exception`` around ``uvicorn.run`` does not swallow it."""

    def __init__(self, app: Any, kwargs: dict[str, Any]) -> None:
        super().__init__("uvicorn.run captured")
        self.app = app
        self.kwargs = kwargs


@contextlib.contextmanager
def _capturing_uvicorn_run() -> Iterator[None]:
    """Replace ``uvicorn.run`` (both spellings) with a stand-in raising :class:`_Captured`."""
    try:
        import uvicorn
        import uvicorn.main  # ``uvicorn.main`` the attribute is the click command
    except ImportError:  # a script-mode entrypoint needs uvicorn; without it nothing to capture
        yield
        return

    def run(app: Any, *args: Any, **kwargs: Any) -> None:
        raise _Captured(app, kwargs)

    uvicorn_main: Any = sys.modules["uvicorn.main"]
    saved = (uvicorn.run, uvicorn_main.run)
    uvicorn.run = run  # type: ignore[assignment]
    uvicorn_main.run = run
    try:
        yield
    finally:
        uvicorn.run, uvicorn_main.run = saved


def _resolve_captured(captured: _Captured, module: types.ModuleType, path: Path) -> Any:
    """The app object behind ``uvicorn.run``'s first argument (an object or ``"mod:attr"``)."""
    app = captured.app
    if isinstance(app, str):
        module_name, _, attr = app.partition(":")
        if module_name == path.stem:
            owner: Any = module
        else:
            owner = importlib.import_module(module_name)
        app = getattr(owner, attr or "app")
    if captured.kwargs.get("factory"):
        app = app()
    return app


def _script_serve(captured: _Captured, via: str) -> ScriptServe:
    kwargs = dict(captured.kwargs)
    host = kwargs.pop("host", None)
    port = kwargs.pop("port", None)
    kwargs.pop("factory", None)
    return ScriptServe(
        via=via,
        host=host if isinstance(host, str) else None,
        port=port if isinstance(port, int) else None,
        options=kwargs,
    )


def _source(module: types.ModuleType) -> str:
    file = getattr(module, "__file__", None)
    if not file:
        return ""
    try:
        return Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def entrypoint_mode(module: types.ModuleType, attribute: str = "app") -> str | None:
    """How an imported entrypoint provides its app, without running anything: ``"app"``
    (module level), ``"factory"`` (``create_app()``), ``"script"`` (the file uses uvicorn and
    has a ``main()`` or a ``__main__`` block to run, as ``python main.py`` would) or ``None``."""
    if getattr(module, attribute, None) is not None:
        return "app"
    if attribute != "app":
        return None
    if callable(getattr(module, "create_app", None)):
        return "factory"
    # Script mode only for an entrypoint that uses uvicorn itself: a main() that does something
    # else (a CLI, a training loop) is never run by the loader.
    source = _source(module)
    if "uvicorn" not in source:
        return None
    if callable(getattr(module, "main", None)):
        return "script"
    if "__main__" in source and "__name__" in source:
        return "script"
    return None


def run_script_entrypoint(
    module: types.ModuleType, rollout_dir: str | Path, entrypoint: str | Path
) -> tuple[Any, ScriptServe]:
    """Run a script-mode entrypoint's ``main()`` (else its ``__main__`` block) until it calls
    ``uvicorn.run``; return the app it passed and what it asked for.

    Raises :class:`RolloutEntrypointError`: ``kind="import_error"`` when the script raises,
    ``kind="no_app"`` when it finishes without calling ``uvicorn.run``.
    """
    root = Path(rollout_dir).resolve()
    path = Path(entrypoint)
    path = (path if path.is_absolute() else root / path).resolve()
    main = getattr(module, "main", None)
    via = "main()" if callable(main) else "__main__"
    with _capturing_uvicorn_run():
        try:
            if callable(main):
                main()
            else:
                runpy.run_path(str(path), run_name="__main__")
        except _Captured as captured:
            try:
                app = _resolve_captured(captured, module, path)
            except Exception as exc:
                raise _import_failed(exc, root, path) from exc
            return app, _script_serve(captured, via)
        except (Exception, SystemExit) as exc:
            raise _import_failed(exc, root, path) from exc
    raise RolloutEntrypointError(
        f"{path.name} has no module-level `app`, and its {via} returned without calling "
        "`uvicorn.run(app, ...)`; define `app = create_rollout_server(backend=...)` at module "
        "level",
        kind="no_app",
    )


def load_rollout_app(
    rollout_dir: str | Path, entrypoint: str | Path = "main.py", attribute: str = "app"
) -> Any:
    """Import the entrypoint and return its ``app`` (the ASGI app ``create_rollout_server`` made).

    A module without ``app`` but with a zero-argument ``create_app()`` gets that called; one with
    neither but a ``main()`` / ``__main__`` block calling ``uvicorn.run(app, ...)`` (script mode,
    as 0.3.x scaffolds) gets that run with ``uvicorn.run`` captured, and its app is returned
    (``app.state.osmosis_rollout_script`` records what the script asked for). Raises
    :class:`RolloutEntrypointError` (``kind="no_app"`` when none of these yields an app).
    """
    # The import itself is never patched: module mode (the fast path) is imported exactly as
    # before, and only a script-mode entrypoint's main() runs with uvicorn.run captured.
    module = import_entrypoint(rollout_dir, entrypoint)
    script: ScriptServe | None = None
    mode = entrypoint_mode(module, attribute)
    if mode == "app":
        app = getattr(module, attribute)
    elif mode == "factory":
        app = module.create_app()
    elif mode == "script":
        app, script = run_script_entrypoint(module, rollout_dir, entrypoint)
    else:
        name = Path(entrypoint).name
        raise RolloutEntrypointError(
            f"{name} has no `{attribute}`; define `{attribute} = create_rollout_server("
            "backend=...)` at module level"
            + (
                " (or a zero-argument `create_app()` returning it, or a `main()` that "
                "calls `uvicorn.run(app, ...)`)"
                if attribute == "app"
                else ""
            ),
            kind="no_app",
        )
    if script is not None:
        with contextlib.suppress(AttributeError):
            app.state.osmosis_rollout_script = script
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
