"""Where a worker process finds the backend: the entrypoint the server's app came from.

A worker cannot receive the backend object (it holds classes, clients and loops that do not
cross processes); it imports the same entrypoint and takes the backend of the app defined there.
The server records the entrypoint when it can:

* ``entrypoint``: the app was loaded by :func:`~osmosis_ai.rollout.entrypoint.load_rollout_app`
  (``osmosis rollout serve``, ``osmosis eval run``), which notes the folder, file and attribute
  on ``app.state``; the worker loads it the same way.
* ``script`` / ``module``: ``python main.py`` (or ``python -m pkg.main``) calling ``serve(app)``
  with ``app`` a module-level name of ``__main__``. The worker runs that file as
  ``__mp_main__`` (so its ``if __name__ == "__main__":`` block does not run, as with
  :mod:`multiprocessing`); an unguarded ``serve(app)`` call there ends the import instead of
  serving (:class:`~osmosis_ai.rollout.server._impl.workers.WorkerImportDone`).

Anything else (an app built inside a function) cannot be rebuilt, and ``serve`` says so.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import types
from typing import Any

from osmosis_ai.rollout.server._impl.workers import WorkerImportDone, WorkerSetupError

STATE_ATTRIBUTE = "osmosis_rollout_entry"


def locate(app: Any) -> dict[str, str]:
    """The recipe a worker follows to rebuild ``app``'s backend (JSON-able)."""
    recorded = getattr(getattr(app, "state", None), STATE_ATTRIBUTE, None)
    if isinstance(recorded, dict):
        return dict(recorded)
    main = sys.modules.get("__main__")
    names = [k for k, v in vars(main).items() if v is app] if main is not None else []
    if main is not None and names:
        spec = getattr(main, "__spec__", None)
        if spec is not None and spec.name and spec.name != "__main__":
            return {"kind": "module", "target": spec.name, "attribute": names[0]}
        path = getattr(main, "__file__", None)
        if path:
            return {"kind": "script", "target": str(path), "attribute": names[0]}
    raise WorkerSetupError(
        "serve(app, workers=N) needs to rebuild the backend in each worker process, by importing "
        "the script that defines `app`; this app is not a module-level name of the script being "
        "run. Define `app = create_rollout_server(backend=...)` at module level of main.py and "
        'call serve(app, workers=N) there (or under `if __name__ == "__main__":`), serve it '
        "with `osmosis rollout serve main.py --workers N`, or use workers=1."
    )


def rebuild_backend(entry: dict[str, str]) -> Any:
    """In a worker: import the entrypoint and return its app's backend."""
    kind, target, attribute = entry["kind"], entry["target"], entry.get("attribute", "app")
    if kind == "entrypoint":
        from osmosis_ai.rollout.entrypoint import load_rollout_app

        app = load_rollout_app(entry["rollout_dir"], target, attribute)
    else:
        namespace = _run_as_mp_main(kind, target)
        app = namespace.get(attribute)
        if app is None:
            raise WorkerSetupError(
                f"the worker imported {target} but it defines no `{attribute}` at module level "
                '(is it created under `if __name__ == "__main__":`?); create the app at module '
                "level so worker processes can rebuild it"
            )
    service = getattr(getattr(app, "state", None), "rollout_service", None)
    if service is None:
        raise WorkerSetupError(
            f"`{attribute}` in {target} is not an app made by create_rollout_server(); a worker "
            "takes the backend from that app"
        )
    return service.backend


def _run_as_mp_main(kind: str, target: str) -> dict[str, Any]:
    if kind == "module":
        spec = importlib.util.find_spec(target)
    else:
        spec = importlib.util.spec_from_file_location("__mp_main__", target)
    if spec is None or spec.loader is None:
        raise WorkerSetupError(f"the worker process cannot find {target} to import it")
    module = types.ModuleType("__mp_main__")
    module.__file__ = spec.origin
    module.__spec__ = spec
    sys.modules["__mp_main__"] = module
    code = spec.loader.get_code(spec.name)  # type: ignore[attr-defined]
    # A module-level serve(app) raises WorkerImportDone: everything above it has run.
    with contextlib.suppress(WorkerImportDone):
        exec(code, module.__dict__)
    return module.__dict__
