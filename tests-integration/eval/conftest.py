"""Fixtures for `osmosis eval run` end-to-end tests: the real CLI in a subprocess."""

from __future__ import annotations

import sys
from pathlib import Path

# pytest runs with --import-mode=importlib: make the sibling helper module importable.
sys.path.insert(0, str(Path(__file__).parent))

from collections.abc import Iterator

import pytest
from eval_support import Cli

from osmosis_ai.testing import ScriptedPolicyServer


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """Runs ``osmosis`` with an isolated OSMOSIS_HOME."""
    return Cli(home=tmp_path / "osmosis-home")


@pytest.fixture
def solving_policy() -> Iterator[ScriptedPolicyServer]:
    """The scripted multiply solver on 127.0.0.1 (tool call, then ``#### <product>``)."""
    with ScriptedPolicyServer("multiply", max_recorded=0) as server:
        yield server
