"""Fixtures for the fleet suite: rollout servers started with `osmosis rollout serve`, each its
own process on its own port, and `osmosis eval run --servers` driving them."""

from __future__ import annotations

import sys
from pathlib import Path

# pytest runs with --import-mode=importlib: reuse the eval suite's CLI helpers.
sys.path.insert(0, str(Path(__file__).parents[1] / "eval"))
sys.path.insert(0, str(Path(__file__).parent))

from collections.abc import Iterator

import pytest
from eval_support import Cli
from fleet_support import ServerFleet


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """Runs ``osmosis`` with an isolated OSMOSIS_HOME."""
    return Cli(home=tmp_path / "osmosis-home")


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[ServerFleet]:
    servers = ServerFleet(tmp_path / "logs")
    try:
        yield servers
    finally:
        servers.stop()
