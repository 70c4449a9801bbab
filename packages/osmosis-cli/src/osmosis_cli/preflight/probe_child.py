"""Runs in a child process: import a rollout entrypoint once and report what happened.

Usage: ``python -m osmosis_cli.preflight.probe_child ROLLOUT_DIR ENTRYPOINT RESULT_JSON``.

The entrypoint is loaded as a submodule of a synthetic package named after the rollout folder
(``_osmosis_rollout_<hash>``), so it is never ``__main__`` (its ``if __name__ == "__main__"``
block, which starts the server, does not run) and relative imports work. The rollout folder is
put first on ``sys.path`` as ``python main.py`` would. The result goes to a file, not stdout,
because rollout code may print anything at import time.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import sys
import traceback
import types
from pathlib import Path
from typing import Any


def _package_name(rollout_dir: Path) -> str:
    digest = hashlib.sha256(str(rollout_dir).encode()).hexdigest()[:16]
    return f"_osmosis_rollout_{digest}"


def _load(rollout_dir: Path, entrypoint: Path) -> types.ModuleType:
    package = _package_name(rollout_dir)
    init = rollout_dir / "__init__.py"
    if init.is_file():
        spec = importlib.util.spec_from_file_location(
            package, init, submodule_search_locations=[str(rollout_dir)]
        )
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {init}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[package] = module
        spec.loader.exec_module(module)
    else:
        module = types.ModuleType(package)
        module.__path__ = [str(rollout_dir)]
        sys.modules[package] = module
    dotted = ".".join(entrypoint.relative_to(rollout_dir).with_suffix("").parts)
    return importlib.import_module(f"{package}.{dotted}")


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


def probe(rollout_dir: Path, entrypoint: Path) -> dict[str, Any]:
    sys.path.insert(0, str(rollout_dir))
    os.environ.setdefault("OSMOSIS_PREFLIGHT", "1")
    try:
        module = _load(rollout_dir, entrypoint)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt included: report them
        filename, line = _location(exc, rollout_dir)
        message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        return {
            "ok": False,
            "error_type": type(exc).__name__,
            "module_not_found": isinstance(exc, ModuleNotFoundError),
            "missing_module": getattr(exc, "name", None),
            "message": message,
            "file": filename,
            "line": line,
            "traceback": "".join(traceback.format_exception(exc))[-4000:],
        }
    attributes: dict[str, str | None] = {}
    for name in ("app", "backend"):
        value = getattr(module, name, None)
        attributes[name] = (
            None if value is None else f"{type(value).__module__}.{type(value).__qualname__}"
        )
    return {"ok": True, "attributes": attributes}


def main(argv: list[str]) -> int:
    rollout_dir, entrypoint, result_path = (Path(a) for a in argv)
    result = probe(rollout_dir.resolve(), entrypoint.resolve())
    Path(result_path).write_text(json.dumps(result, default=str), encoding="utf-8")
    # Leave without running interpreter shutdown hooks of half-imported rollout code.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
