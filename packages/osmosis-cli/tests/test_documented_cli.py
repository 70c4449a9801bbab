"""Every documented command and option (``documented_cli.txt``) exists in the CLI's tree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

LISTING = Path(__file__).with_name("documented_cli.txt")


def documented() -> list[tuple[list[str], list[str]]]:
    entries = []
    for line in LISTING.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        words = line.split()
        path = [w for w in words if not w.startswith("-")]
        options = [w for w in words if w.startswith("-")]
        entries.append((path, options))
    return entries


def _command(root: Any, path: list[str]) -> Any:
    command = root
    for name in path:
        command = command.get_command(None, name) if hasattr(command, "get_command") else None
        if command is None:
            return None
    return command


def test_every_documented_command_and_option_exists() -> None:
    from osmosis_cli.cli_app import build_root
    from osmosis_cli.main import GLOBAL_FLAGS, VALUE_FLAGS

    root = build_root()
    missing: list[str] = []
    for path, options in documented():
        if path == ["@global"]:
            known = GLOBAL_FLAGS | set(VALUE_FLAGS)
            missing += [f"(global) {o}" for o in options if o not in known]
            continue
        command = _command(root, path)
        if command is None:
            missing.append(" ".join(path))
            continue
        declared = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
        missing += [f"{' '.join(path)} {o}" for o in options if o not in declared]
    assert missing == [], "documented but missing:\n" + "\n".join(missing)


def test_the_listing_is_read() -> None:
    entries = documented()
    assert len(entries) > 40
    assert (["dataset", "validate"], []) in entries
