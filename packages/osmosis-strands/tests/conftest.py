"""Shared fixtures: an isolated OSMOSIS_HOME, and the test folder importable as modules.

The rollout modules in this folder (``strands_*.py``, prefixed to avoid clashing with other
packages' test helpers when several suites run in one process) are written the way
a user writes a rollout project, so tests import them by name like LocalBackend would.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Pay the one-time import of Strands' OpenAI model (it pulls in openai, about a second) during
# collection instead of inside whichever test happens to make the first policy call.
import strands.models.openai  # noqa: F401

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture(autouse=True)
def osmosis_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "osmosis-home"
    monkeypatch.setenv("OSMOSIS_HOME", str(home))
    for name in ("OSMOSIS_CHAT_COMPLETIONS_URL", "OSMOSIS_API_KEY", "OSMOSIS_ROLLOUT_ID"):
        monkeypatch.delenv(name, raising=False)
    return home
