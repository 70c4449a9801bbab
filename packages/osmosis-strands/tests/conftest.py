"""The test folder importable as modules. The fixtures (an isolated OSMOSIS_HOME, the scripted
multiply policy, ``rollout_server``) come from osmosis_ai.testing's pytest plugin, which the
repository's root conftest.py loads.

The rollout modules in this folder (``strands_*.py``, prefixed to avoid clashing with other
packages' test helpers when several suites run in one process) are written the way
a user writes a rollout project, so tests import them by name like LocalBackend would.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Pay the one-time import of Strands' OpenAI model (it pulls in openai, about a second) during
# collection instead of inside whichever test happens to make the first policy call.
import strands.models.openai  # noqa: F401

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
