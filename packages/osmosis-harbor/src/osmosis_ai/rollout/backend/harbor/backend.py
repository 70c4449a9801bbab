"""``HarborBackend``: one rollout = one Harbor trial on a caller-owned ``TrialQueue``.

This module is the lifecycle only; the other concerns live next to it:

- :mod:`._config`: the constructor's arguments, validated into a ``HarborConfig``;
- :mod:`._trial`: the task copy and the ``TrialConfig`` for one rollout, and the trial dir
  afterwards (reading it back, moving artifacts, scrubbing secrets);
- :mod:`._outcome`: the pure ``TrialResult`` → ``ExecutionOutcome`` translation and the
  reward rule for multi-reward verifiers.

Data flow of :meth:`HarborBackend.execute`: prepare the trial (the policy endpoint comes from
the request), submit it to the queue, let the queue hooks report ``running`` (trial start) and
``grading`` (verifier start) to the server's ``progress`` and scrub secrets from
``config.json`` as soon as Harbor writes it, then translate the ``TrialResult``.
The rollout server owns status, retention and cancellation: cancelling ``execute``'s task
cancels the trial, whose environment Harbor stops before the cancellation returns.

The queue must not retry (``RetryConfig(max_retries=0)``): a retry would replay hooks and
start a second trial for one rollout.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import shutil
import tempfile
import time
import weakref
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.backend.base import ExecutionBackend
from osmosis_ai.rollout.context import RolloutContext, RolloutProgress, rollout_context_for
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest

from . import _config, _digests, _outcome, _trial
from ._sandbox_gate import gate_for
from ._sandbox_limits import resolve_limits
from ._sandbox_owner import sweep_orphans
from .agent import RESULT_METADATA_KEY
from .bundle import Bundle, BundleError, build_bundle
from .environments import resolve_environment
from .hygiene import scrub_paths
from .tasks import TaskMode, TaskSelectionError

if TYPE_CHECKING:
    from harbor.models.trial.config import EnvironmentConfig
    from harbor.models.trial.result import TrialResult
    from harbor.trial.hooks import TrialHookEvent
    from harbor.trial.queue import TrialQueue

logger = logging.getLogger(__name__)

trial_name_for = _trial.trial_name_for


@dataclass
class _Live:
    """An in-flight rollout, for the queue hooks and the queue-depth limit (never retained)."""

    trial_name: str
    secrets: tuple[str, ...]
    context: RolloutContext | None
    status: RolloutStatus = RolloutStatus.QUEUED
    trials_dir: Path | None = None


def _failure(message: str, category: RolloutErrorCategory) -> ExecutionOutcome:
    return ExecutionOutcome(workflow=_outcome.failure(message, category))


class _Withdrawn(Exception):
    """The trial was cancelled by the backend itself (queue deadline, shutdown)."""

    def __init__(self, message: str, category: RolloutErrorCategory) -> None:
        super().__init__(message)
        self.message = message
        self.category = category


class HarborBackend(ExecutionBackend):
    """Runs every rollout as a Harbor trial (see the module docs for the data flow).

    ``agent`` is a native Harbor agent name (``oracle``, ``nop``, ``terminus-2``,
    ``mini-swe-agent``) or an ``AgentWorkflow`` class / ``"module:Class"``, which is bundled
    with its project (``code_dir``, default: the directory its module imports from) into a
    wheel and run inside the sandbox. ``grader`` (a ``Grader`` class / ``"module:Class"``) is
    used only for tasks without their own ``tests/test.sh``. A task verifier writing several
    rewards (``reward.json``) is reduced to one by ``reward_key=`` (that entry) or
    ``reward_weights=`` (a weighted sum); by default ``reward`` if present, else the mean.
    Trials run in ``environment_config`` (Harbor's Docker by default), unless
    ``OSMOSIS_HARBOR_ENV`` is set: the operator's choice wins (see
    :func:`.environments.resolve_environment`).

    Sandbox creation is limited per environment (see :mod:`._sandbox_limits`; each ``None``
    falls back to its ``OSMOSIS_HARBOR_*`` variable, then the environment's default):
    ``sandbox_creation_rate`` (per second), ``max_concurrent_sandboxes``,
    ``sandbox_creation_attempts`` and ``sandbox_creation_backoff_sec`` (0 = no limit for the
    first two). Before its first trial the backend removes sandboxes left by dead processes.
    """

    def __init__(
        self,
        *,
        orchestrator: TrialQueue | None = None,
        tasks_dir: Path | str | None = None,
        agent: str | type | None = None,
        native_agent_kwargs: dict[str, Any] | None = None,
        task_mode: TaskMode | str = TaskMode.TEMPLATE,
        model_name: str = "openai/osmosis-rollout",
        grader: type | str | None = None,
        workflow_config: Any = None,
        grader_config: Any = None,
        code_dir: Path | str | None = None,
        bundle: Path | str | None = None,
        environment_config: EnvironmentConfig | None = None,
        trials_dir: Path | str | None = None,
        cleanup_successful_trials: bool = True,
        patch_dockerfile_with_sdk: bool | None = None,
        agent_setup_timeout_sec: float | None = None,
        max_queue_depth: int | None = None,
        reward_key: str | None = None,
        reward_weights: dict[str, float] | None = None,
        sandbox_creation_rate: float | None = None,
        max_concurrent_sandboxes: int | None = None,
        sandbox_creation_attempts: int | None = None,
        sandbox_creation_backoff_sec: float | None = None,
        **legacy: Any,
    ) -> None:
        if legacy:
            raise TypeError(_config.legacy_message(legacy))
        environment_config = resolve_environment(environment_config)
        self._config = _config.build_config(
            orchestrator=orchestrator,
            tasks_dir=tasks_dir,
            agent=agent,
            native_agent_kwargs=native_agent_kwargs,
            task_mode=task_mode,
            model_name=model_name,
            grader=grader,
            workflow_config=workflow_config,
            grader_config=grader_config,
            code_dir=code_dir,
            bundle=bundle,
            environment_config=environment_config,
            cleanup_successful_trials=cleanup_successful_trials,
            patch_dockerfile_with_sdk=patch_dockerfile_with_sdk,
            agent_setup_timeout_sec=agent_setup_timeout_sec,
            max_queue_depth=max_queue_depth,
            reward_key=reward_key,
            reward_weights=reward_weights,
            sandbox_limits=resolve_limits(
                _config.environment_name(environment_config),
                creation_rate=sandbox_creation_rate,
                max_concurrent=max_concurrent_sandboxes,
                creation_attempts=sandbox_creation_attempts,
                backoff_sec=sandbox_creation_backoff_sec,
            ),
        )
        self._bundle: Bundle | None = self._config.bundle
        self._bundle_lock = asyncio.Lock()
        self._dirs = _trial.WorkDirs.create(self._config.tasks_dir, trials_dir)
        # A process that exits without shutdown() (or never ran a rollout) leaves no empty dirs.
        weakref.finalize(self, _trial.remove_empty_dirs, self._dirs.removable)
        self._live: dict[str, _Live] = {}  # by trial name
        self._trial_tasks: set[asyncio.Future[TrialResult]] = set()
        self._closed = False
        self._swept = False
        from harbor.trial.hooks import TrialEvent

        queue = self._config.queue
        queue.add_hook(TrialEvent.START, self._on_start)
        queue.add_hook(TrialEvent.ENVIRONMENT_START, self._on_environment_start)
        queue.add_hook(TrialEvent.VERIFICATION_START, self._on_verification_start)

    # --- public surface -------------------------------------------------------------------

    @property
    def trials_dir(self) -> Path:
        return self._dirs.trials

    def has_capacity(self) -> bool:
        if self._closed:
            return False
        limit = self._config.max_queue_depth
        return limit is None or self._queued() < limit

    def health(self) -> dict[str, Any]:
        env_name = _config.environment_name(self._config.environment)
        queued = self._queued()
        return {
            "status": "ok" if not self._closed else "shutting_down",
            "backend": "harbor",
            "agent": self._config.agent_label,
            "task_mode": str(self._config.mode),
            "in_flight": len(self._live),
            "running": len(self._live) - queued,
            "queued": queued,
            "max_queue_depth": self._config.max_queue_depth,
            "sandbox_limits": self._config.sandbox_limits.as_kwargs(),
            "chat_endpoint": {
                "environment": env_name,
                # Only the local sandbox shares the host's network (loopback works there).
                "requires_public_url": env_name not in ("local", "custom"),
            },
        }

    async def shutdown(self) -> None:
        """Refuse new rollouts and stop running trials (their rollouts fail as shut down)."""
        self._closed = True
        tasks = list(self._trial_tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.to_thread(shutil.rmtree, self._dirs.staging, True)
        # Failed trials are kept for diagnosis; an otherwise empty work dir is removed.
        _trial.remove_empty_dirs(self._dirs.removable)

    async def prewarm(self) -> dict[str, Any]:
        """Build the bundle and, in template mode, run one ``install_only`` trial so images
        are built and the agent is installed before the first rollout arrives."""
        summary: dict[str, Any] = {}
        started = time.perf_counter()
        await self._sweep_orphans()
        bundle = await self._ensure_bundle()
        if bundle is not None:
            summary["bundle"] = bundle.wheel.name
        if self._config.mode is TaskMode.TEMPLATE:
            summary["install_trial"] = await self._install_trial(bundle)
        summary["seconds"] = round(time.perf_counter() - started, 3)
        return summary

    def prewarm_lifespan(self) -> Callable[[Any], contextlib.AbstractAsyncContextManager[None]]:
        """A FastAPI lifespan that prewarms before serving: ``create_rollout_server(backend=b,
        lifespan=b.prewarm_lifespan())``."""

        @contextlib.asynccontextmanager
        async def lifespan(_app: Any) -> AsyncIterator[None]:
            summary = await self.prewarm()
            logger.info("harbor backend prewarmed: %s", summary)
            yield

        return lifespan

    # --- execution ------------------------------------------------------------------------

    async def execute(
        self, request: ExecutionRequest, progress: RolloutProgress | None = None
    ) -> ExecutionOutcome:
        if self._closed:
            return _failure("the backend is shutting down", RolloutErrorCategory.INTERNAL_ERROR)
        trial_name = trial_name_for(request.id)
        if trial_name in self._live:
            return _failure(
                f"rollout {request.id!r} is already running on this backend",
                RolloutErrorCategory.VALIDATION_ERROR,
            )
        if request.agent_timeout_sec is not None and request.agent_timeout_sec <= 0:
            return _failure(
                "the agent deadline passed before the trial could start",
                RolloutErrorCategory.TIMEOUT,
            )
        admitted = asyncio.get_running_loop().time()
        ctx = rollout_context_for(request, progress)
        endpoint = _trial.Endpoint(url=ctx.chat_completions_url, api_key=ctx.api_key)
        secrets = tuple(s for s in (endpoint.api_key, *self._config.kwarg_secrets) if s)
        live = _Live(trial_name=trial_name, secrets=secrets, context=ctx)
        self._live[trial_name] = live
        try:
            return await self._run(request, live, endpoint, admitted)
        finally:
            self._live.pop(trial_name, None)

    async def _run(
        self, request: ExecutionRequest, live: _Live, endpoint: _trial.Endpoint, admitted: float
    ) -> ExecutionOutcome:
        await self._sweep_orphans()
        try:
            bundle = await self._ensure_bundle()
            prepared = await _trial.prepare(
                self._config, request, endpoint, bundle, self._dirs.staging_root(), self.trials_dir
            )
        except (TaskSelectionError, BundleError, ValueError, TypeError) as exc:
            if isinstance(exc, BundleError):
                return _failure(str(exc), RolloutErrorCategory.INTERNAL_ERROR)
            return _failure(str(exc), RolloutErrorCategory.VALIDATION_ERROR)
        live.trials_dir = self.trials_dir
        keep = functools.partial(_trial.tidy, prepared, request.id, live.secrets, keep_trial=True)
        try:
            result = await self._submit(request, live, prepared, admitted)
        except asyncio.CancelledError:
            # The trial was cancelled with this task; Harbor has stopped its environment.
            await asyncio.to_thread(keep)
            raise
        except _Withdrawn as withdrawn:
            await asyncio.to_thread(keep)
            return _failure(withdrawn.message, withdrawn.category)
        except Exception as exc:  # a bug or an infrastructure failure, never reward 0
            logger.exception("harbor rollout %s failed", request.id)
            await asyncio.to_thread(keep)
            return _failure(f"harbor backend error: {exc}", RolloutErrorCategory.INTERNAL_ERROR)
        return await asyncio.to_thread(self._finish, request, live, prepared, result)

    async def _submit(
        self,
        request: ExecutionRequest,
        live: _Live,
        prepared: _trial.PreparedTrial,
        admitted: float,
    ) -> TrialResult:
        """Run the trial. The agent budget counts from admission: a trial still queued when
        it runs out is withdrawn (once started, Harbor enforces the agent phase's timeout)."""
        trial_task = asyncio.ensure_future(self._config.queue.submit(prepared.trial))
        self._trial_tasks.add(trial_task)
        expired = False

        def expire() -> None:
            nonlocal expired
            if live.status == RolloutStatus.QUEUED and not trial_task.done():
                expired = True
                trial_task.cancel()

        timer = None
        if request.agent_timeout_sec is not None:
            loop = asyncio.get_running_loop()
            timer = loop.call_at(admitted + request.agent_timeout_sec, expire)
        try:
            return await trial_task
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # our caller cancelled the rollout
            if expired:
                raise _Withdrawn(
                    "the agent deadline passed while the rollout waited for a trial slot",
                    RolloutErrorCategory.TIMEOUT,
                ) from None
            raise _Withdrawn(
                "the backend shut down while the trial ran", RolloutErrorCategory.INTERNAL_ERROR
            ) from None
        finally:
            self._trial_tasks.discard(trial_task)
            if timer is not None:
                timer.cancel()

    def _finish(
        self,
        request: ExecutionRequest,
        live: _Live,
        prepared: _trial.PreparedTrial,
        result: TrialResult,
    ) -> ExecutionOutcome:
        """Read the finished trial back, translate it and tidy up (blocking: in a thread)."""
        facts = _trial.read_facts(self._config, request, prepared)
        outcome = _outcome.translate(result, facts, RESULT_METADATA_KEY)
        _digests.attach(outcome, prepared.task_record)
        keep = (
            outcome.result.status != RolloutStatus.SUCCESS
            or not self._config.cleanup_successful_trials
        )
        _trial.tidy(prepared, request.id, live.secrets, keep_trial=keep, collect_artifacts=result)
        logger.debug(
            "harbor rollout %s: %s, reward %s (trial %s)",
            request.id,
            outcome.result.status,
            outcome.wire_reward,
            live.trial_name,
        )
        return outcome

    # --- hooks ----------------------------------------------------------------------------

    async def _on_start(self, event: TrialHookEvent) -> None:
        live = self._live.get(event.trial_name)
        if live is None:
            return
        live.status = RolloutStatus.RUNNING
        if live.trials_dir is not None and live.secrets:
            config_json = live.trials_dir / live.trial_name / "config.json"
            await asyncio.to_thread(scrub_paths, [config_json], live.secrets)
        if live.context is not None:
            await live.context.set_status(RolloutStatus.RUNNING)

    async def _on_environment_start(self, event: TrialHookEvent) -> None:
        # The sandbox slot and creation admission are waited for here, outside the build
        # timeout Harbor puts on the environment's start (see _sandbox_gate).
        if event.trial_name in self._live:
            gate = gate_for(self._config.sandbox_limits)
            await gate.reserve(f"{event.trial_name}__env")

    async def _on_verification_start(self, event: TrialHookEvent) -> None:
        live = self._live.get(event.trial_name)
        if live is None:
            return
        live.status = RolloutStatus.GRADING
        if live.context is not None:
            await live.context.set_status(RolloutStatus.GRADING)

    # --- helpers --------------------------------------------------------------------------

    async def _sweep_orphans(self) -> None:
        """Once per backend: remove sandboxes whose owner process died (a killed run)."""
        if not self._swept:
            self._swept = True
            await sweep_orphans(self._config.sandbox_limits.environment)

    def _queued(self) -> int:
        return sum(1 for live in self._live.values() if live.status == RolloutStatus.QUEUED)

    async def _ensure_bundle(self) -> Bundle | None:
        if self._config.code_dir is None:
            return None
        async with self._bundle_lock:
            if self._bundle is None:
                exclude = (self._dirs.trials, self._dirs.root)
                self._bundle = await asyncio.to_thread(
                    build_bundle,
                    self._config.code_dir,
                    self._config.spec.as_json(),
                    exclude=exclude,
                )
        return self._bundle

    async def _install_trial(self, bundle: Bundle | None) -> str:
        """One ``install_only`` trial of the template task (prewarm)."""
        staging = Path(tempfile.mkdtemp(prefix="prewarm-", dir=self._dirs.staging_root()))
        try:
            config = await _trial.install_only_trial(self._config, bundle, staging)
            result = await self._config.queue.submit(config)
            return "ok" if result.exception_info is None else result.exception_info.exception_type
        finally:
            await asyncio.to_thread(shutil.rmtree, staging, True)
