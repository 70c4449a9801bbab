"""Settings every test run in this repository shares (package suites and tests-integration)."""

from __future__ import annotations

import os

# pytest-xdist's workers start with COLUMNS=80 and LINES=24 in their environment. The CLI reads
# COLUMNS as "a terminal this wide" and wraps its tables to it, so a test run with ``-n 2`` would
# see other output than one without. Tests that care about the width set it themselves.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("COLUMNS", "LINES"):
        os.environ.pop(_name, None)
