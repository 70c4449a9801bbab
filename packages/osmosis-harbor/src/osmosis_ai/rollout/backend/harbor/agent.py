"""The harness agent that runs an ``AgentWorkflow`` inside a Harbor trial.

Harbor loads it by import path (:data:`WORKFLOW_AGENT_IMPORT_PATH`). ``setup`` installs the
bundle wheel into the sandbox's Python; ``run`` stages the rollout input and starts the
in-sandbox runner, then reads the runner's result back through ``exec`` (which works whether or
not the environment mounts the log directories). The policy endpoint and key reach the runner as
``OSMOSIS_*`` environment variables that Harbor passes from ``AgentConfig.env`` (Harbor
redacts key-like values when it writes the trial config), never through files or ``kwargs``.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from osmosis_ai.errors import BackendError

from ._sandbox_paths import (
    AGENT_INPUT,
    AGENT_RESULT,
    PYTHON_MARKER,
    RUNNER_LOG,
    SANDBOX_BUNDLE_DIR,
    SANDBOX_VENV_PYTHON,
)
from .environments import BUNDLE_NO_DEPS_ENV, SANDBOX_PYTHON_ENV, SANDBOX_UV_ENV

WORKFLOW_AGENT_IMPORT_PATH = "osmosis_ai.rollout.backend.harbor.agent:OsmosisWorkflowAgent"
RESULT_METADATA_KEY = "osmosis_result"
_OUTPUT_TAIL = 2000


class WorkflowSetupError(BackendError):
    """The bundle could not be installed in the sandbox."""


class WorkflowRunnerError(BackendError):
    """The in-sandbox runner crashed before writing its result file."""


def install_script(wheel_path: str) -> str:
    """Shell that installs a bundle wheel into the sandbox Python and records which Python.

    The interpreter is ``$OSMOSIS_SANDBOX_PYTHON``, else ``/opt/osmosis/venv/bin/python`` (a venv
    an image can pre-populate with the rollout's dependencies), else ``python3``. uv is used when
    present (``$OSMOSIS_SANDBOX_UV``, else on the sandbox's PATH: fast, and it installs into any
    interpreter), otherwise pip; with neither, the error says so.
    """
    wheel = shlex.quote(wheel_path)
    return f"""set -e
PY="${{{SANDBOX_PYTHON_ENV}:-}}"
if [ -z "$PY" ]; then
  if [ -x {SANDBOX_VENV_PYTHON} ]; then PY={SANDBOX_VENV_PYTHON}; else PY="$(command -v python3)"; fi
fi
if [ -z "$PY" ]; then echo "no python3 in the sandbox image: install Python 3.12+ in the task image" >&2; exit 3; fi
DEPS=""
if [ "${{{BUNDLE_NO_DEPS_ENV}:-0}}" = "1" ]; then DEPS="--no-deps"; fi
UV="${{{SANDBOX_UV_ENV}:-}}"
if [ -z "$UV" ] || [ ! -x "$UV" ]; then UV="$(command -v uv || true)"; fi
if [ -n "$UV" ]; then
  "$UV" pip install --quiet --python "$PY" --break-system-packages $DEPS {wheel}
elif "$PY" -m pip --version >/dev/null 2>&1; then
  "$PY" -m pip install --quiet --break-system-packages $DEPS {wheel}
else
  echo "neither uv nor pip can install into $PY: put uv in the sandbox image (pip install uv) or set {SANDBOX_UV_ENV}" >&2; exit 3
fi
mkdir -p "$(dirname {PYTHON_MARKER})"
printf '%s' "$PY" > {PYTHON_MARKER}
"""


def _tail(text: str | None) -> str:
    return (text or "").strip()[-_OUTPUT_TAIL:]


class OsmosisWorkflowAgent(BaseAgent):
    """Runs the bundled ``AgentWorkflow`` in the sandbox (one instance per trial)."""

    def __init__(
        self,
        logs_dir: Path,
        model_name: str | None = None,
        *args: Any,
        osmosis_wheel: str,
        osmosis_package: str,
        osmosis_input: dict[str, Any],
        **kwargs: Any,
    ) -> None:
        super().__init__(logs_dir, model_name, *args, **kwargs)
        self._wheel = Path(osmosis_wheel)
        self._package = osmosis_package
        self._input = osmosis_input

    @staticmethod
    def name() -> str:
        return "osmosis-agent-workflow"

    def version(self) -> str | None:
        try:
            return version("osmosis-harbor")
        except PackageNotFoundError:
            return None

    async def setup(self, environment: BaseEnvironment) -> None:
        target = f"{SANDBOX_BUNDLE_DIR}/{self._wheel.name}"
        await environment.exec(f"mkdir -p {SANDBOX_BUNDLE_DIR}")
        await environment.upload_file(self._wheel, target)
        result = await environment.exec(install_script(target))
        if result.return_code != 0:
            raise WorkflowSetupError(
                f"installing the rollout bundle in the sandbox failed (exit {result.return_code}): "
                f"{_tail(result.stderr) or _tail(result.stdout)}"
            )

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(self._input, handle, ensure_ascii=False)
            staged = Path(handle.name)
        try:
            await environment.exec(f"mkdir -p {shlex.quote(str(Path(AGENT_INPUT).parent))}")
            await environment.upload_file(staged, AGENT_INPUT)
        finally:
            await asyncio.to_thread(staged.unlink, True)
        command = (
            f'"$(cat {PYTHON_MARKER})" -m {self._package} agent > {RUNNER_LOG} 2>&1; '
            f"status=$?; cat {AGENT_RESULT} 2>/dev/null; exit $status"
        )
        result = await environment.exec(command)
        try:
            outcome = json.loads(result.stdout or "")
        except ValueError:
            log = await environment.exec(f"tail -c {_OUTPUT_TAIL} {RUNNER_LOG}")
            raise WorkflowRunnerError(
                f"the rollout runner exited with {result.return_code} without a result: "
                f"{_tail(log.stdout) or _tail(result.stderr)}"
            ) from None
        context.metadata = {**(context.metadata or {}), RESULT_METADATA_KEY: outcome}
