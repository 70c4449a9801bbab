"""``osmosis --help`` and ``osmosis --version`` without importing Typer.

Importing Typer (and the Click it vendors) costs more than 100 ms on a small machine, and
agents call ``osmosis --help`` to discover the CLI. The top-level help is fully determined by
:mod:`osmosis_cli.registry`, so it is rendered here in Click's layout; a test checks that it
names exactly the commands the Typer app has.
"""

from __future__ import annotations

import os

from osmosis_cli.registry import COMMANDS, GLOBAL_OPTIONS, ROOT_HELP


def render_root_help(prog: str = "osmosis") -> str:
    try:
        columns = int(os.environ.get("COLUMNS") or os.get_terminal_size().columns)
    except (OSError, ValueError):
        columns = 80
    width = min(columns, 100)
    lines = [f"Usage: {prog} [OPTIONS] COMMAND [ARGS]...", "", f"  {ROOT_HELP}", ""]
    lines.append("Options:")
    lines.extend(_rows(GLOBAL_OPTIONS, width))
    lines.append("")
    lines.append("Commands:")
    lines.extend(_rows(tuple((c.name, c.help) for c in COMMANDS), width))
    lines.append("")
    lines.append(f"Run '{prog} COMMAND --help' for the options of a command.")
    return "\n".join(lines) + "\n"


def _rows(rows: tuple[tuple[str, str], ...], width: int) -> list[str]:
    first = max(len(name) for name, _ in rows) + 2
    out = []
    for name, text in rows:
        room = max(width - first - 4, 20)
        out.append(f"  {name.ljust(first)}{text[:room]}")
    return out


def version_details() -> dict[str, object]:
    """``osmosis --version --json``'s data: this CLI, the SDK version and every installed
    osmosis distribution (:mod:`osmosis_ai.versions`)."""
    from osmosis_ai.versions import installed_versions, sdk_version
    from osmosis_cli import __version__

    return {
        "name": "osmosis-cli",
        "version": __version__,
        "sdk_version": sdk_version(),
        "distributions": installed_versions(),
    }


def render_version() -> str:
    """``osmosis-ai 0.4.0 (osmosis-core 0.1.0, osmosis-cli 0.1.0, ...)``: the umbrella first
    when it is installed (else the CLI), then the other installed distributions."""
    from osmosis_ai.versions import installed_versions
    from osmosis_cli import __version__

    found = installed_versions()
    found.setdefault("osmosis-cli", __version__)
    head = "osmosis-ai" if "osmosis-ai" in found else "osmosis-cli"
    others = ", ".join(f"{name} {version}" for name, version in found.items() if name != head)
    return f"{head} {found[head]}" + (f" ({others})" if others else "") + "\n"
