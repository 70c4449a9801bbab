"""Fixtures for the "first hour" suite: a new user's mistakes, each through the real CLI."""

from __future__ import annotations

import sys
from pathlib import Path

# pytest runs with --import-mode=importlib: reuse the eval suite's CLI helpers.
sys.path.insert(0, str(Path(__file__).parents[1] / "eval"))

import pytest
from eval_support import Cli


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """Runs ``osmosis`` with an isolated OSMOSIS_HOME."""
    return Cli(home=tmp_path / "osmosis-home")
