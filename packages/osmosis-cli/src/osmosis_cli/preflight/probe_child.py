"""Runs in a child process: import a rollout entrypoint once and report what happened.

Usage: ``python -m osmosis_cli.preflight.probe_child ROLLOUT_DIR ENTRYPOINT RESULT_JSON``.

The entrypoint is imported by :func:`osmosis_ai.rollout.entrypoint.import_entrypoint`, the same
loader ``osmosis rollout serve`` and ``osmosis eval run`` use, so all three agree on whether a
``main.py`` imports. The result goes to a file, not stdout, because rollout code may print
anything at import time.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


def _failed(exc: Any) -> dict[str, Any]:
    cause = exc.__cause__
    return {
        "ok": False,
        "error_type": exc.error_type or type(exc).__name__,
        "module_not_found": exc.kind == "module_not_found",
        "missing_module": exc.missing_module,
        "message": (cause.msg if isinstance(cause, SyntaxError) else str(cause))
        if cause is not None
        else str(exc),
        "file": exc.file,
        "line": exc.line,
        "traceback": exc.traceback_text,
    }


def _qualname(value: Any) -> str | None:
    return None if value is None else f"{type(value).__module__}.{type(value).__qualname__}"


def probe(rollout_dir: Path, entrypoint: Path) -> dict[str, Any]:
    from osmosis_ai.rollout.entrypoint import (
        RolloutEntrypointError,
        entrypoint_mode,
        import_entrypoint,
        run_script_entrypoint,
    )

    os.environ.setdefault("OSMOSIS_PREFLIGHT", "1")
    try:
        module = import_entrypoint(rollout_dir, entrypoint)
    except RolloutEntrypointError as exc:
        return _failed(exc)
    attributes: dict[str, str | None] = {}
    for name in ("app", "backend"):
        attributes[name] = _qualname(getattr(module, name, None))
    mode = entrypoint_mode(module)
    result: dict[str, Any] = {"ok": True, "attributes": attributes, "mode": mode}
    if mode == "script":
        # Script mode (0.3.x scaffolds): run main() with uvicorn.run captured, as serve and
        # eval run do, so a script that never builds an app fails here, not at serve time.
        try:
            app, script = run_script_entrypoint(module, rollout_dir, entrypoint)
        except RolloutEntrypointError as exc:
            if exc.kind == "no_app":
                result["mode"] = None
                result["script_error"] = str(exc)
                return result
            return _failed(exc)
        attributes["app"] = _qualname(app)
        registry = getattr(getattr(app, "state", None), "rollout_futures", None)
        backend = getattr(registry, "backend", None)
        if backend is not None and attributes["backend"] is None:
            attributes["backend"] = _qualname(backend)
        result["script"] = {
            "via": script.via,
            "host": script.host,
            "port": script.port,
            "binds_all_interfaces": script.binds_all_interfaces,
        }
    return result


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
