"""Fixtures for the rollout server tests (helpers live in ``rollout_server_harness.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .rollout_server_harness import FakeBackend


@pytest.fixture(autouse=True)
def osmosis_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test writes under its own temporary OSMOSIS_HOME, never ``~/.osmosis``."""
    home = tmp_path / "osmosis-home"
    monkeypatch.setenv("OSMOSIS_HOME", str(home))
    for name in (
        "_OSMOSIS_ROLLOUT_ARTIFACT_ROOT",
        "OSMOSIS_ROLLOUT_API_KEY",
        "_OSMOSIS_ROLLOUT_INSTANCE_ID",
        "OSMOSIS_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()
