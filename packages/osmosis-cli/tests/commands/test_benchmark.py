"""``osmosis benchmark`` costs ``osmosis --help`` nothing (its documented commands and flags are
checked with the rest in tests/test_documented_cli.py)."""

from __future__ import annotations

import subprocess
import sys


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
