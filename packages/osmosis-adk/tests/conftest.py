"""Shared fixtures: a temporary OSMOSIS_HOME and the scripted multiply policy on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from osmosis_ai.rollout.integrations.spi import aclose_policy_clients
from osmosis_ai.testing import ScriptedPolicyServer


@pytest.fixture(autouse=True)
def osmosis_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Nothing a test runs may write to ~/.osmosis."""
    home = tmp_path / "osmosis-home"
    monkeypatch.setenv("OSMOSIS_HOME", str(home))
    for name in ("OSMOSIS_CHAT_COMPLETIONS_URL", "OSMOSIS_API_KEY", "OSMOSIS_ROLLOUT_ID"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
async def multiply_policy() -> AsyncIterator[ScriptedPolicyServer]:
    """The built-in multiply solver: a ``multiply`` tool call, then ``#### <product>``."""
    async with ScriptedPolicyServer("multiply") as server:
        yield server
    await aclose_policy_clients()
