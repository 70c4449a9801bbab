"""``osmosis rollout serve``: run a rollout's ASGI ``app`` with uvicorn.

The app is loaded by :func:`osmosis_ai.rollout.entrypoint.load_rollout_app`, the loader
``rollout validate`` and ``eval run`` use too. Without ``--reload`` it is loaded here and handed to
:func:`osmosis_ai.rollout.server.serve`, which drains in-flight rollouts on SIGTERM/SIGINT. With
``--reload`` uvicorn runs the same loader (``osmosis_ai.rollout.entrypoint:app_from_env``) as a
factory in the worker it restarts on changes.
"""

from __future__ import annotations

import os
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


def serve_rollout(
    entrypoint: str, *, host: str, port: int | None, reload: bool, workers: str | None = None
) -> None:
    path, attr = split_entrypoint(entrypoint)
    if reload and workers not in (None, "1"):
        raise CLIError(
            CLIErrorCode.VALIDATION,
            "--workers cannot be combined with --reload; use --reload while developing and "
            "--workers N to serve",
        )
    target = resolve_target(path)
    try:
        import uvicorn
    except ModuleNotFoundError:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"`osmosis rollout serve` needs uvicorn and FastAPI: {SERVER_EXTRA_HINT}",
            details={"missing": "uvicorn"},
        ) from None
    from osmosis_ai.rollout.server.serving import (
        DEFAULT_TIMEOUT_KEEP_ALIVE,
        is_loopback_host,
        resolve_port,
    )

    output = get_output()
    if not is_loopback_host(host):
        output.warn(
            "PUBLIC_BIND",
            f"binding {host}: the rollout server is reachable from other machines; protect it "
            "with create_rollout_server(api_key=...) or a firewall",
        )
    try:
        bound_port = resolve_port(port)
    except ValueError as exc:
        raise CLIError(CLIErrorCode.VALIDATION, str(exc)) from None
    # Port 0 asks the system for a free port: its URL is logged once the server listens.
    where = f"http://{host}:{bound_port}" if bound_port else f"{host}, on a free port"
    output.progress(
        f"Serving {target.rollout_label}/{target.entrypoint_label}:{attr} on {where} "
        "(Ctrl-C to stop)"
    )
    if reload:
        from osmosis_ai.rollout import entrypoint as loader

        os.environ[loader.ENV_ROLLOUT_DIR] = str(target.rollout_dir)
        os.environ[loader.ENV_ENTRYPOINT] = str(target.entrypoint)
        os.environ[loader.ENV_ATTRIBUTE] = attr
        # uvicorn.run, not serving.uvicorn_config: the reloader pickles the config into a child
        # process, and the connection-guard protocol class cannot be pickled.
        uvicorn.run(
            "osmosis_ai.rollout.entrypoint:app_from_env",
            factory=True,
            host=host,
            port=bound_port,
            reload=True,
            reload_dirs=[str(target.rollout_dir)],
            timeout_keep_alive=DEFAULT_TIMEOUT_KEEP_ALIVE,
        )
    else:
        from osmosis_ai.errors import ConfigurationError
        from osmosis_ai.rollout.server import serve

        app = _load_app(target.rollout_dir, target.entrypoint, attr)
        try:
            serve(app, host=host, port=bound_port, workers=workers)
        except ConfigurationError as exc:
            raise CLIError(CLIErrorCode.VALIDATION, str(exc)) from exc
    output.emit_operation("rollout.serve", message="Rollout server stopped.")


def _load_app(rollout_dir: Path, entrypoint: Path, attr: str) -> Any:
    from osmosis_ai.rollout.entrypoint import RolloutEntrypointError, load_rollout_app

    try:
        return load_rollout_app(rollout_dir, entrypoint, attr)
    except RolloutEntrypointError as exc:
        details: dict[str, Any] = {"error_type": exc.error_type, "kind": exc.kind}
        if exc.missing_module:
            details["missing_module"] = exc.missing_module
        raise CLIError(CLIErrorCode.VALIDATION, str(exc), details=details) from exc
