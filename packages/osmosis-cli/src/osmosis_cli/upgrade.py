"""``osmosis upgrade``: upgrade the CLI the way it was installed.

The installed distribution is ``osmosis-ai`` (the umbrella) when present, else ``osmosis-cli``.
Its newest release comes from the package index's JSON API (``OSMOSIS_PYPI_URL``, default
``https://pypi.org/pypi``). The install method is read from where this interpreter lives:

=====================  =============================================================
method                 command
=====================  =============================================================
``uv tool``            ``uv tool upgrade DIST``
``pipx``               ``pipx upgrade DIST``
``pip``                ``python -m pip install --upgrade DIST`` (this interpreter's pip),
                       else ``uv pip install --python <this interpreter> --upgrade DIST``
=====================  =============================================================

``--dry-run`` prints the command without running it. The command's own output is shown (rich)
or captured into the envelope (``--json``/``--plain``).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Output

DEFAULT_INDEX = "https://pypi.org/pypi"
METHODS = ("uv tool", "pipx", "pip")


def installed_distribution() -> tuple[str, str]:
    """(name, version) of the distribution to upgrade."""
    for name in ("osmosis-ai", "osmosis-cli"):
        try:
            return name, importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    raise CLIError(CLIErrorCode.INTERNAL, "Neither osmosis-ai nor osmosis-cli is installed here.")


def install_method(executable: str = sys.executable) -> str:
    """``uv tool``, ``pipx`` or ``pip``, from this interpreter's path."""
    parts = Path(executable).parts
    joined = "/".join(parts)
    if "uv/tools" in joined or os.environ.get("UV_TOOL_DIR", "\0") in executable:
        return "uv tool"
    if "pipx/venvs" in joined or os.environ.get("PIPX_HOME", "\0") in executable:
        return "pipx"
    return "pip"


def upgrade_command(method: str, dist: str, executable: str = sys.executable) -> list[str]:
    if method == "uv tool":
        return ["uv", "tool", "upgrade", dist]
    if method == "pipx":
        return ["pipx", "upgrade", dist]
    probe = subprocess.run([executable, "-m", "pip", "--version"], capture_output=True, check=False)
    if probe.returncode == 0:
        return [executable, "-m", "pip", "install", "--upgrade", dist]
    return ["uv", "pip", "install", "--python", executable, "--upgrade", dist]


def latest_version(dist: str) -> str:
    index = os.environ.get("OSMOSIS_PYPI_URL", DEFAULT_INDEX).rstrip("/")
    url = f"{index}/{dist}/json"
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers={"Accept": "application/json"}), timeout=15
        ) as response:
            return str(json.load(response)["info"]["version"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CLIError(
            CLIErrorCode.NETWORK,
            f"Could not read the newest {dist} release from {index} ({type(exc).__name__}). "
            f"Check the network, or upgrade by hand: pip install --upgrade {dist}.",
            details={"index": index},
        ) from None


def run_upgrade(output: Output, *, dry_run: bool) -> None:
    from packaging.version import InvalidVersion, Version

    dist, installed = installed_distribution()
    latest = latest_version(dist)
    resource: dict[str, Any] = {
        "distribution": dist,
        "installed_version": installed,
        "latest_version": latest,
    }
    try:
        current = Version(installed) >= Version(latest)
    except InvalidVersion:
        current = False
    if current:
        output.emit_operation(
            "upgrade",
            status="no_update",
            message=f"{dist} {installed} is up to date.",
            resource=resource,
        )
        return
    method = install_method()
    command = upgrade_command(method, dist)
    resource.update(method=method, command=command)
    if dry_run:
        output.emit_operation(
            "upgrade",
            status="dry_run",
            resource=resource,
            message=f"{dist} {installed} -> {latest} ({method}): would run {' '.join(command)}",
        )
        return
    if shutil.which(command[0]) is None:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"{command[0]} is not on PATH, so '{' '.join(command)}' cannot run. Install it, or "
            f"upgrade by hand: pip install --upgrade {dist}.",
            details=resource,
        )
    output.progress(f"Upgrading {dist} {installed} -> {latest} ({method}): {' '.join(command)}")
    capture = output.is_json or not output.interactive
    done = subprocess.run(command, capture_output=capture, text=True, check=False, timeout=600)
    if capture:
        resource.update(stdout=done.stdout[-4000:], stderr=done.stderr[-4000:])
    if done.returncode != 0:
        raise CLIError(
            CLIErrorCode.INTERNAL,
            f"'{' '.join(command)}' failed (exit {done.returncode}); nothing else was changed. "
            f"Try it by hand, or: pip install --upgrade {dist}.",
            details=resource,
        )
    output.emit_operation(
        "upgrade",
        message=f"Upgraded {dist} {installed} -> {latest} ({method}).",
        resource=resource,
    )
