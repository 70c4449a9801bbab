"""The client tests drive the real rollout server, reusing the server tests' harness."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def osmosis_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "osmosis-home"
    monkeypatch.setenv("OSMOSIS_HOME", str(home))
    monkeypatch.delenv("OSMOSIS_ROLLOUT_API_KEY", raising=False)
    monkeypatch.delenv("_OSMOSIS_ROLLOUT_ARTIFACT_ROOT", raising=False)
    return home
