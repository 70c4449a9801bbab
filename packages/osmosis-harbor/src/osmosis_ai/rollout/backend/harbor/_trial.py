"""Building one rollout's Harbor trial, and reading it back once it has finished.

:func:`prepare` selects the task, copies it for this rollout (in template mode the prompt
becomes ``instruction.md``; with ``grader=`` and no task verifier a generated ``tests/test.sh``
runs the SDK grader) and builds the ``TrialConfig``: the agent (a native Harbor agent pointed
at the policy endpoint, or the harness agent running the bundled ``AgentWorkflow``), the
caller's ``EnvironmentConfig`` and the verifier. :func:`read_facts` and :func:`tidy` run after
the trial: the former collects what the outcome translation needs from the trial directory,
the latter moves artifacts, scrubs secrets and deletes what is not kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from . import _sandbox_paths as paths
from ._config import environment_name
from ._digests import task_record
from ._outcome import TrialFacts
from .agent import WORKFLOW_AGENT_IMPORT_PATH, install_script
from .hygiene import relocate_artifacts, scrub_tree
from .native import native_agent_config
from .runner import sample_from_atif
from .tasks import (
    TaskMode,
    TaskSelectionError,
    fetch_task,
    materialize_task,
    render_instruction,
    select_task,
    task_has_verifier,
    task_steps,
)

if TYPE_CHECKING:
    from harbor.models.trial.config import AgentConfig, EnvironmentConfig, TrialConfig
    from osmosis_ai.rollout.types.execution import ExecutionRequest

    from ._config import HarborConfig
    from .bundle import Bundle

logger = logging.getLogger(__name__)


def trial_name_for(rollout_id: str) -> str:
    # Trial names become directory and container names: keep them lowercase and short, and
    # unique per rollout id (the digest disambiguates ids that sanitize to the same text).
    slug = re.sub(r"[^a-z0-9_-]+", "-", rollout_id.lower()).strip("-")[:40] or "rollout"
    return f"osmosis-{slug}-{hashlib.sha256(rollout_id.encode()).hexdigest()[:8]}"


@dataclass(frozen=True, slots=True)
class WorkDirs:
    """A backend's scratch space: per-rollout task copies and (by default) trial dirs."""

    root: Path
    trials: Path
    staging: Path

    @classmethod
    def create(cls, tasks_dir: Path, trials_dir: Path | str | None) -> WorkDirs:
        root = Path(tempfile.mkdtemp(prefix=f"osmosis-harbor-{tasks_dir.name[:32]}-"))
        trials = Path(trials_dir).expanduser().resolve() if trials_dir else root / "trials"
        return cls(root=root, trials=trials, staging=root / "rollouts")

    @property
    def removable(self) -> list[Path]:
        """Directories removed when empty (innermost first)."""
        return [self.staging, self.root / "trials", self.root]

    def staging_root(self) -> Path:
        self.staging.mkdir(parents=True, exist_ok=True)
        return self.staging


def remove_empty_dirs(directories: list[Path]) -> None:
    for directory in directories:
        with contextlib.suppress(OSError):
            directory.rmdir()


@dataclass(frozen=True, slots=True)
class Endpoint:
    """The policy a rollout's agent calls."""

    url: str | None
    api_key: str | None


@dataclass
class PreparedTrial:
    trial: TrialConfig
    staging: Path
    graded_by: str  # "task" | "sdk" | "none"
    #: What the task and its image were (:mod:`._digests`), for the reproducibility record.
    task_record: dict[str, Any] | None = None

    @property
    def trial_dir(self) -> Path:
        return Path(self.trial.trials_dir) / self.trial.trial_name


def environment_config(config: HarborConfig) -> EnvironmentConfig:
    """The trial's environment: the caller's, created and destroyed through the sandbox gate."""
    from ._sandbox_gate import gated_environment_config

    if config.environment is not None:
        return gated_environment_config(config.environment, config.sandbox_limits)
    from harbor.models.trial.config import EnvironmentConfig

    return gated_environment_config(EnvironmentConfig(), config.sandbox_limits)


async def prepare(
    config: HarborConfig,
    request: ExecutionRequest,
    endpoint: Endpoint,
    bundle: Bundle | None,
    staging_root: Path,
    trials_dir: Path,
) -> PreparedTrial:
    """Copy the task for this rollout and build its ``TrialConfig`` (see the module docs)."""
    from harbor.models.trial.config import TaskConfig, TrialConfig, VerifierConfig

    source = select_task(mode=config.mode, tasks_dir=config.tasks_dir, metadata=request.metadata)
    source_dir = await fetch_task(source)
    trial_name = trial_name_for(request.id)
    staging = staging_root / trial_name
    await asyncio.to_thread(shutil.rmtree, staging, True)
    task_dir = await asyncio.to_thread(materialize_task, source_dir, staging / source_dir.name)
    record = await asyncio.to_thread(
        task_record, source, source_dir, config.tasks_dir, environment_name(config.environment)
    )
    steps = task_steps(task_dir)
    if steps:
        # Multi-step: Harbor runs each step's instruction, agent and verifier and combines the
        # rewards. A template prompt is one instruction, so it cannot stand in for the steps.
        if config.mode is TaskMode.TEMPLATE:
            raise TaskSelectionError(
                f"task {source.description} has [[steps]]: each step brings its own "
                "instruction, so run it with task_mode='dataset' (template mode writes the "
                "rollout's prompt as the one instruction)"
            )
        missing = [s for s in steps if not (task_dir / "steps" / s / "instruction.md").is_file()]
        if missing:
            raise TaskSelectionError(
                f"task {source.description} has no instruction.md for step(s) "
                + ", ".join(missing)
                + " (steps/<name>/instruction.md)"
            )
    else:
        if config.mode is TaskMode.TEMPLATE and source.kind == "local" and request.prompt:
            (task_dir / "instruction.md").write_text(render_instruction(request.prompt))
        if not (task_dir / "instruction.md").is_file():
            raise TaskSelectionError(
                f"task {source.description} has no instruction.md and the request has no prompt"
            )
    if config.native is None and not endpoint.url:
        raise ValueError(
            "no policy endpoint: the request carries no chat_completions_url (the rollout "
            "server always sets it; outside a server, set OSMOSIS_CHAT_COMPLETIONS_URL)"
        )
    graded_by = "none"
    if task_has_verifier(task_dir):
        graded_by = "task"
    elif config.spec.grader is not None and bundle is not None:
        await asyncio.to_thread(install_sdk_verifier, task_dir, request, bundle)
        graded_by = "sdk"
    verifier = VerifierConfig(disable=not request.grade or graded_by == "none")
    if request.grader_timeout_sec is not None:
        verifier.override_timeout_sec = max(request.grader_timeout_sec, 0.001)
    trial = TrialConfig(
        task=TaskConfig(path=task_dir),
        trial_name=trial_name,
        trials_dir=trials_dir,
        agent=agent_config(config, request, endpoint, bundle, task_dir),
        environment=environment_config(config),
        verifier=verifier,
    )
    return PreparedTrial(trial=trial, staging=staging, graded_by=graded_by, task_record=record)


def agent_config(
    config: HarborConfig,
    request: ExecutionRequest,
    endpoint: Endpoint,
    bundle: Bundle | None,
    task_dir: Path,
) -> AgentConfig:
    from harbor.models.trial.config import AgentConfig

    url = endpoint.url or ""
    allowed = allowlist_hosts(task_dir, url)
    if config.native is not None:
        agent = native_agent_config(
            config.native,
            model_name=config.model_name,
            chat_completions_url=url,
            api_key=endpoint.api_key,
            extra_kwargs=config.native_kwargs,
            extra_allowed_hosts=allowed,
        )
    else:
        if bundle is None:
            raise ValueError("a workflow agent needs its bundle")
        env = {"OSMOSIS_CHAT_COMPLETIONS_URL": url, "OSMOSIS_ROLLOUT_ID": request.id}
        if endpoint.api_key:
            env["OSMOSIS_API_KEY"] = endpoint.api_key
        agent = AgentConfig(
            import_path=WORKFLOW_AGENT_IMPORT_PATH,
            # No model_name: the workflow's own config names its model, and a model name
            # makes Harbor >= 0.25 import LiteLLM (seconds of CPU) just to parse it.
            kwargs={
                "osmosis_wheel": str(bundle.wheel),
                "osmosis_package": bundle.package,
                "osmosis_input": {
                    "rollout_id": request.id,
                    "prompt": request.prompt,
                    "metadata": request.metadata,
                },
            },
            env=env,
            extra_allowed_hosts=allowed,
        )
    if request.agent_timeout_sec is not None:
        agent.override_timeout_sec = max(request.agent_timeout_sec, 0.001)
    if config.agent_setup_timeout_sec is not None:
        agent.override_setup_timeout_sec = config.agent_setup_timeout_sec
    return agent


async def install_only_trial(
    config: HarborConfig, bundle: Bundle | None, staging: Path
) -> TrialConfig:
    """A trial that only starts the environment and installs the agent (``prewarm``).

    Template mode only. There the rollout's prompt owns ``instruction.md``, so a template task
    need not ship one; Harbor's ``Task`` reads it all the same, so the copy gets a placeholder
    prompt's instruction, as osmosis-ai 0.3.8 does (the agent never runs in this trial).
    """
    from harbor.models.trial.config import TaskConfig, TrialConfig, VerifierConfig
    from osmosis_ai.rollout.types.execution import ExecutionRequest

    source = config.tasks_dir
    task_dir = await asyncio.to_thread(materialize_task, source, staging / source.name)
    request = ExecutionRequest(id="prewarm", prompt=[{"role": "user", "content": "prewarm"}])
    (task_dir / "instruction.md").write_text(render_instruction(request.prompt))
    endpoint = Endpoint(url="http://127.0.0.1:9/prewarm", api_key=None)
    return TrialConfig(
        task=TaskConfig(path=task_dir),
        trial_name=f"osmosis-prewarm-{staging.name[-8:].lower()}",
        trials_dir=staging / "trials",
        install_only=True,
        agent=agent_config(config, request, endpoint, bundle, task_dir),
        environment=environment_config(config),
        verifier=VerifierConfig(disable=True),
    )


def install_sdk_verifier(task_dir: Path, request: ExecutionRequest, bundle: Bundle) -> None:
    """Write ``tests/test.sh`` that runs the SDK grader (only for tasks without one)."""
    grader_input = paths.tests_copy(task_dir, paths.GRADER_INPUT)
    grader_input.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(bundle.wheel, grader_input.parent / bundle.wheel.name)
    grader_input.write_text(
        json.dumps(
            {
                "rollout_id": request.id,
                "prompt": request.prompt,
                "label": request.label,
                "metadata": request.metadata,
            },
            ensure_ascii=False,
        )
    )
    wheel_in_sandbox = f"{paths.TESTS_OSMOSIS_DIR}/{bundle.wheel.name}"
    script = (
        "#!/bin/bash\n"
        "# Generated by osmosis-harbor: runs the rollout's SDK grader.\n"
        f'PY="$(cat {paths.PYTHON_MARKER} 2>/dev/null)"\n'
        f'if [ -z "$PY" ] || ! "$PY" -c "import {bundle.package}" 2>/dev/null; then\n'
        "(\n"
        f"{install_script(wheel_in_sandbox)}"
        ") || exit 3\n"
        f'  PY="$(cat {paths.PYTHON_MARKER})"\n'
        "fi\n"
        f'exec "$PY" -m {bundle.package} grade\n'
    )
    test_sh = task_dir / "tests" / "test.sh"
    test_sh.write_text(script)
    test_sh.chmod(0o755)


def allowlist_hosts(task_dir: Path, url: str) -> list[str]:
    """The policy host, for tasks whose network mode is an allowlist (never for no-network)."""
    import tomllib

    toml = task_dir / "task.toml"
    if not toml.is_file() or not url:
        return []
    try:
        data = tomllib.loads(toml.read_text())
    except tomllib.TOMLDecodeError:
        return []
    modes = {
        (data.get("environment") or {}).get("network_mode"),
        (data.get("agent") or {}).get("network_mode"),
    }
    host = urlsplit(url).hostname
    return [host] if host and "allowlist" in modes else []


def read_facts(
    config: HarborConfig, request: ExecutionRequest, prepared: PreparedTrial
) -> TrialFacts:
    """What the outcome translation needs from the finished trial's directory (blocking)."""
    trial_dir = prepared.trial_dir
    native_messages = None
    if config.native is not None:
        native_messages = sample_from_atif(
            paths.on_host(trial_dir, paths.AGENT_TRAJECTORY), request.prompt
        )
    grader_result: dict[str, Any] | None = None
    result_file = paths.on_host(trial_dir, paths.GRADER_RESULT)
    if prepared.graded_by == "sdk" and result_file.is_file():
        try:
            loaded = json.loads(result_file.read_text())
        except (OSError, ValueError):
            loaded = None
        grader_result = loaded if isinstance(loaded, dict) else None
    return TrialFacts(
        request=request,
        trial_name=prepared.trial.trial_name,
        graded_by=prepared.graded_by,
        native=config.native,
        reward_rule=config.reward_rule,
        native_messages=native_messages,
        grader_result=grader_result,
    )


def tidy(
    prepared: PreparedTrial,
    rollout_id: str,
    secrets: tuple[str, ...],
    *,
    keep_trial: bool,
    collect_artifacts: object = None,
) -> None:
    """After a trial: move its artifacts (when it ran: ``collect_artifacts`` is its result),
    scrub secrets, delete what is not kept (blocking)."""
    trial_dir = prepared.trial_dir
    try:
        if collect_artifacts is not None:
            from osmosis_ai.rollout.integrations.spi import rollout_dir

            relocate_artifacts(trial_dir / "artifacts", rollout_dir(rollout_id) / "artifacts")
        scrub_tree(trial_dir, secrets)
        if not keep_trial:
            shutil.rmtree(trial_dir, ignore_errors=True)
    except OSError:
        logger.warning("could not tidy trial dir %s", trial_dir, exc_info=True)
    shutil.rmtree(prepared.staging, ignore_errors=True)
