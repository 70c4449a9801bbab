"""``osmosis benchmark``: the command tree has every documented command and flag (a checked-in
list, so a regression shows), and the group costs ``osmosis --help`` nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from typer import _click as click

from osmosis_cli.cli_app import build_root

DOCUMENTED = Path(__file__).with_name("documented_benchmark_cli.txt")


def _command(path: list[str]) -> Any:
    command: Any = build_root()
    context = click.Context(command)
    for name in path:
        # Typer vendors Click: groups are told apart by `list_commands` (as gen_cli_reference)
        assert hasattr(command, "list_commands"), f"{command.name} has no subcommands"
        found = command.get_command(context, name)
        assert found is not None, f"'osmosis {' '.join(path)}' is missing ({name!r})"
        command = found
    return command


def test_every_documented_benchmark_command_and_flag_exists() -> None:
    lines = [
        line.split()
        for line in DOCUMENTED.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert len(lines) == 8
    for words in lines:
        path = [w for w in words if not w.startswith("-")]
        flags = {w for w in words if w.startswith("-")}
        command = _command(path)
        declared = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
        assert flags <= declared, f"osmosis {' '.join(path)} lacks {sorted(flags - declared)}"


def test_benchmark_is_listed_by_the_fast_help_without_importing_its_module() -> None:
    code = (
        "import sys\nfrom osmosis_cli.main import run\n"
        "try:\n    run(['--help'])\nexcept SystemExit:\n    pass\n"
        "assert 'osmosis_cli.commands.benchmark' not in sys.modules\n"
        "assert 'osmosis_ai.eval' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "benchmark" in done.stdout
