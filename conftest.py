"""Settings every test run in this repository shares (package suites and tests-integration).

osmosis_ai.testing's pytest plugin is loaded here, for every suite: pytest takes a
``pytest_plugins`` line only from the rootdir's conftest.py (one in a package's tests/ folder
fails ``pytest packages/`` at collection). Its autouse ``osmosis_home`` points OSMOSIS_HOME into
each test's tmp_path and unsets the policy variables; a suite's own ``osmosis_home`` fixture
(core, environments, Harbor) replaces it there. Each nox session that runs pytest installs
osmosis-core with its ``server`` extra and pytest-asyncio, which the plugin needs.
"""

from __future__ import annotations

import os

pytest_plugins = ["osmosis_ai.testing.pytest_plugin"]

# pytest-xdist's workers start with COLUMNS=80 and LINES=24 in their environment. The CLI reads
# COLUMNS as "a terminal this wide" and wraps its tables to it, so a test run with ``-n 2`` would
# see other output than one without. Tests that care about the width set it themselves.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("COLUMNS", "LINES"):
        os.environ.pop(_name, None)
