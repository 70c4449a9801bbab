"""Where things live inside a Harbor sandbox, and where Harbor mirrors them on the host.

The one definition of the file contract between the backend (host), the harness agent and
the in-sandbox runner. Standard library only: this file is copied into every bundle wheel next
to ``runner.py``, which imports it relatively, so it must import nothing else.

Harbor's own layout (``EnvironmentPaths``): ``/logs/agent``, ``/logs/verifier`` and
``/logs/artifacts`` are the log directories it collects into ``<trial>/agent``,
``<trial>/verifier`` and ``<trial>/artifacts/logs/artifacts``; ``/tests`` receives the task's
``tests/`` only when the verifier starts (so the agent never sees the label staged there).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

LOGS_AGENT = "/logs/agent"
LOGS_VERIFIER = "/logs/verifier"
ARTIFACTS_DIR = "/logs/artifacts"
LOG_DIRS = (LOGS_AGENT, LOGS_VERIFIER, ARTIFACTS_DIR)

# Written by the harness agent before the runner starts (no label, no key).
AGENT_INPUT = f"{LOGS_AGENT}/osmosis_input.json"
# Written by the runner: {status, sample?, err_message?, err_category?}.
AGENT_RESULT = f"{LOGS_AGENT}/osmosis_result.json"
RUNNER_LOG = f"{LOGS_AGENT}/osmosis-runner.log"
# A native agent's ATIF trajectory.
AGENT_TRAJECTORY = f"{LOGS_AGENT}/trajectory.json"

# The generated SDK verifier: tests/osmosis/ in the task copy, /tests/osmosis in the sandbox.
TESTS_OSMOSIS_DIR = "/tests/osmosis"
GRADER_INPUT = f"{TESTS_OSMOSIS_DIR}/grader_input.json"
REWARD_JSON = f"{LOGS_VERIFIER}/reward.json"
# Written by the runner's grade step: the graded result, in the shape of AGENT_RESULT.
GRADER_RESULT = f"{LOGS_VERIFIER}/osmosis_grader_result.json"

# Where the bundle is installed and which interpreter runs it.
OSMOSIS_DIR = "/opt/osmosis"
SANDBOX_BUNDLE_DIR = f"{OSMOSIS_DIR}/bundles"
SANDBOX_VENV_PYTHON = f"{OSMOSIS_DIR}/venv/bin/python"
PYTHON_MARKER = f"{OSMOSIS_DIR}/python"

# Harbor's trial directory mirrors each log directory under this name.
_HOST_DIRS = {LOGS_AGENT: "agent", LOGS_VERIFIER: "verifier"}


def on_host(trial_dir: Path, sandbox_path: str) -> Path:
    """The host copy Harbor keeps of a file under ``/logs/agent`` or ``/logs/verifier``."""
    path = PurePosixPath(sandbox_path)
    parent = str(path.parent)
    if parent not in _HOST_DIRS:
        raise ValueError(f"{sandbox_path} is not in a log directory Harbor collects")
    return trial_dir / _HOST_DIRS[parent] / path.name


def tests_copy(task_dir: Path, sandbox_path: str) -> Path:
    """Where a file under ``/tests`` lives in the task copy (Harbor uploads ``tests/``)."""
    relative = PurePosixPath(sandbox_path).relative_to("/tests")
    return task_dir / "tests" / relative
