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


def probe(rollout_dir: Path, entrypoint: Path) -> dict[str, Any]:
    from osmosis_ai.rollout.entrypoint import RolloutEntrypointError, import_entrypoint

    os.environ.setdefault("OSMOSIS_PREFLIGHT", "1")
    try:
        module = import_entrypoint(rollout_dir, entrypoint)
    except RolloutEntrypointError as exc:
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
