"""``osmosis rollout serve``: run a rollout's ASGI ``app`` with uvicorn.

Without ``--reload`` the app is imported here and handed to
:func:`osmosis_ai.rollout.server.serve`, which drains in-flight rollouts on SIGTERM/SIGINT.
With ``--reload`` uvicorn imports ``module:attr`` itself in a worker it restarts on changes.
"""

from __future__ import annotations

import importlib
import ipaddress
import sys
from pathlib import Path
from typing import Any

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import get_output
from osmosis_cli.preflight.target import resolve_target

SERVER_EXTRA_HINT = "pip install 'osmosis-ai[server]' (or 'osmosis-core[server]')"


def split_entrypoint(value: str) -> tuple[str, str]:
    """``"rollouts/x/main.py:app"`` -> (path, attribute); a Windows drive colon is not a split."""
    path, sep, attr = value.rpartition(":")
    if sep and attr.isidentifier() and path and not (len(path) == 1 and path.isalpha()):
        return path, attr
    return value, "app"


def serve_rollout(entrypoint: str, *, host: str, port: int | None, reload: bool) -> None:
    path, attr = split_entrypoint(entrypoint)
    target = resolve_target(path)
    module = ".".join(target.entrypoint.relative_to(target.rollout_dir).with_suffix("").parts)
    try:
        import uvicorn
    except ModuleNotFoundError:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"`osmosis rollout serve` needs uvicorn and FastAPI: {SERVER_EXTRA_HINT}",
            details={"missing": "uvicorn"},
        ) from None
    from osmosis_ai.rollout.server.serving import resolve_port

    output = get_output()
    if not _is_loopback(host):
        output.warn(
            "PUBLIC_BIND",
            f"binding {host}: the rollout server is reachable from other machines; protect it "
            "with create_rollout_server(api_key=...) or a firewall",
        )
    try:
        bound_port = resolve_port(port)
    except ValueError as exc:
        raise CLIError(CLIErrorCode.VALIDATION, str(exc)) from None
    output.progress(
        f"Serving {target.rollout_label}/{target.entrypoint_label}:{attr} on "
        f"http://{host}:{bound_port} (Ctrl-C to stop)"
    )
    if reload:
        uvicorn.run(
            f"{module}:{attr}",
            host=host,
            port=bound_port,
            reload=True,
            reload_dirs=[str(target.rollout_dir)],
            app_dir=str(target.rollout_dir),
            timeout_keep_alive=2160,
        )
    else:
        from osmosis_ai.rollout.server import serve

        serve(_load_app(target.rollout_dir, module, attr), host=host, port=bound_port)
    output.emit_operation("rollout.serve", message="Rollout server stopped.")


def _load_app(rollout_dir: Path, module: str, attr: str) -> Any:
    sys.path.insert(0, str(rollout_dir))
    # A module of the same name from another folder (`main` is common) must not be reused.
    cached = sys.modules.get(module)
    cached_file = getattr(cached, "__file__", None) or ""
    if cached is not None and not cached_file.startswith(str(rollout_dir)):
        del sys.modules[module]
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"Importing {module} failed: {exc}. Install the rollout's dependencies "
            f"(e.g. `uv pip install -e {rollout_dir}`).",
            details={"missing_module": exc.name},
        ) from exc
    except Exception as exc:  # the rollout's own code failed: the user's problem, not ours
        import traceback

        frames = traceback.extract_tb(exc.__traceback__)
        own = [f for f in frames if f.filename.startswith(str(rollout_dir))] or frames
        where = f"{own[-1].filename}:{own[-1].lineno}: " if own else ""
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"Importing {module} failed: {where}{type(exc).__name__}: {exc}",
            details={"error_type": type(exc).__name__},
        ) from exc
    app = getattr(loaded, attr, None)
    if app is None:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"{module} has no `{attr}`; define `{attr} = create_rollout_server(backend=...)` "
            "at module level.",
            details={"module": module, "attribute": attr},
        )
    return app


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
