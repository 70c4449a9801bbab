"""Shared fixtures: every test writes under a temporary osmosis home, never ``~/.osmosis``."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def osmosis_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "osmosis-home"
    monkeypatch.setenv("OSMOSIS_HOME", str(home))
    monkeypatch.delenv("_OSMOSIS_ROLLOUT_ARTIFACT_ROOT", raising=False)
    for name in ("OSMOSIS_CHAT_COMPLETIONS_URL", "OSMOSIS_API_KEY", "OSMOSIS_ROLLOUT_ID"):
        monkeypatch.delenv(name, raising=False)
    return home
