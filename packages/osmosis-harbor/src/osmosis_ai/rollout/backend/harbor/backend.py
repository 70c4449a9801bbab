"""``HarborBackend``: one rollout = one Harbor trial on a caller-owned ``TrialQueue``.

Data flow of :meth:`HarborBackend.execute`:

1. select the task (:mod:`.tasks`) and copy it for this rollout; in template mode the prompt
   becomes ``instruction.md``; with ``grader=`` and no task verifier, a generated
   ``tests/test.sh`` runs the SDK grader (reward precedence: the task's own verifier wins);
2. build the ``TrialConfig``: the agent (a native Harbor agent with the policy endpoint injected,
   or the :mod:`.agent` harness running the bundled ``AgentWorkflow``), the caller's
   ``EnvironmentConfig`` and the verifier; submit it to the queue;
3. queue hooks move the rollout's status (``running`` at trial start, ``grading`` when the
   verifier starts) and scrub secrets from ``config.json`` as soon as Harbor writes it;
4. the ``TrialResult`` becomes the ``ExecutionOutcome``: the workflow phase from the agent
   (runner result, or the native agent's trajectory), the grader phase from the verifier's
   ``reward``. Infrastructure failures (environment, setup) are ``internal_error``, never 0.

The queue must not retry (``RetryConfig(max_retries=0)``): a retry would replay hooks and
start a second trial for one rollout.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import re
import shutil
import sys
import tempfile
import time
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from osmosis_ai.rollout.backend.base import (
    CANCELLED_QUEUED,
    CANCELLED_RUNNING,
    NOT_FOUND,
    ExecutionBackend,
)
from osmosis_ai.rollout.backend.harbor import runner as contract
from osmosis_ai.rollout.backend.harbor.agent import (
    RESULT_METADATA_KEY,
    WORKFLOW_AGENT_IMPORT_PATH,
    install_script,
)
from osmosis_ai.rollout.backend.harbor.bundle import Bundle, BundleError, build_bundle
from osmosis_ai.rollout.backend.harbor.hygiene import relocate_artifacts, scrub_paths, scrub_tree
from osmosis_ai.rollout.backend.harbor.local_environment import LOCAL_ENVIRONMENT_IMPORT_PATH
from osmosis_ai.rollout.backend.harbor.native import NATIVE_AGENTS, native_agent_config
from osmosis_ai.rollout.backend.harbor.tasks import (
    TaskMode,
    TaskSelectionError,
    fetch_task,
    materialize_task,
    render_instruction,
    select_task,
    task_has_verifier,
)
from osmosis_ai.rollout.context import RolloutContext, get_rollout_context
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest, ExecutionResult
from osmosis_ai.rollout.types.sample import RolloutSample

if TYPE_CHECKING:
    from harbor.models.trial.config import AgentConfig, EnvironmentConfig, TrialConfig
    from harbor.models.trial.result import TrialResult
    from harbor.trial.hooks import TrialHookEvent
    from harbor.trial.queue import TrialQueue

logger = logging.getLogger(__name__)

MIGRATION_GUIDE = "https://docs.osmosis.ai/migration-guides/v0-3"
STATUS_RETENTION_SEC = 900.0
_VERIFIER_EXCEPTIONS = frozenset(
    {
        "RewardFileNotFoundError",
        "RewardFileEmptyError",
        "VerifierOutputParseError",
        "VerifierTimeoutError",
        "AddTestsDirError",
        "DownloadVerifierDirError",
    }
)
_LEGACY_KWARGS: dict[str, str] = {
    "task_dir": "tasks_dir= (a task directory in template mode, or a directory of tasks with "
    "task_mode='dataset')",
    "workflow": "agent= (an AgentWorkflow class or 'module:Class')",
    "user_code_dir": "code_dir=",
    "custom_tests_dir": "a tests/test.sh inside the task (it takes precedence) or grader=",
    "prebuild_local_image": "backend.prewarm() or prewarm_lifespan()",
    "symlink_environment": "nothing: tasks are copied per rollout and symlinks are rejected",
    "agent_name": "agent= (a native agent name such as 'terminus-2')",
    "agent_kwargs": "native_agent_kwargs=",
    "environment": "environment_config= (see environment_config_from_env())",
    "environment_type": "environment_config= (see environment_config_from_env())",
    "max_concurrency": "TrialQueue(n_concurrent=...) for concurrency, max_queue_depth= for 429s",
    "n_concurrent": "TrialQueue(n_concurrent=...)",
    "jobs_dir": "trials_dir=",
    "job_dir": "trials_dir=",
    "keep_trials": "cleanup_successful_trials=False",
}
_BUNDLE_NAME = re.compile(r"^(osmosis_bundle_[0-9a-f]{16})-")


@dataclass
class _Rollout:
    """Backend-side state of one in-flight rollout."""

    id: str
    trial_name: str
    context: RolloutContext | None
    secrets: tuple[str, ...]
    status: RolloutStatus = RolloutStatus.QUEUED
    trial_task: asyncio.Task[TrialResult] | None = None
    cancel_requested: bool = False
    deadline_passed: bool = False
    trials_dir: Path | None = None


@dataclass
class _Prepared:
    trial: TrialConfig
    staging: Path
    graded_by: str  # "task" | "sdk" | "none"
    native: bool


@dataclass
class _Finished:
    payload: dict[str, Any]
    expires_at: float


@dataclass
class _Spec:
    workflow: str | None = None
    workflow_config: dict[str, Any] | None = None
    grader: str | None = None
    grader_config: dict[str, Any] | None = None
    code_dir: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "workflow": self.workflow,
            "workflow_config": self.workflow_config,
            "grader": self.grader,
            "grader_config": self.grader_config,
        }


def trial_name_for(rollout_id: str) -> str:
    # Trial names become directory and container names: keep them lowercase and short, and
    # unique per rollout id (the digest disambiguates ids that sanitize to the same text).
    slug = re.sub(r"[^a-z0-9_-]+", "-", rollout_id.lower()).strip("-")[:40] or "rollout"
    return f"osmosis-{slug}-{hashlib.sha256(rollout_id.encode()).hexdigest()[:8]}"


def _module_import_name(module_name: str) -> str:
    """``__main__`` is the rollout's ``main.py`` on the host but a plain module in the sandbox."""
    if module_name != "__main__":
        return module_name
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if not main_file:
        raise ValueError(
            "classes defined in an interactive session cannot be bundled; define them in a "
            "module of the rollout project"
        )
    return Path(main_file).stem


def _import_path_of(obj: Any, what: str, base: type) -> str:
    if isinstance(obj, str):
        if ":" not in obj:
            raise ValueError(f"{what}={obj!r} must be a class or a 'module:Class' import path")
        from osmosis_ai.rollout.backend.harbor.runner import _import

        try:
            resolved = _import(obj)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"{what}={obj!r} cannot be imported: {exc}") from exc
        if not (isinstance(resolved, type) and issubclass(resolved, base)):
            raise TypeError(f"{what}={obj!r} must name a subclass of {base.__name__}")
        return obj
    if isinstance(obj, type) and issubclass(obj, base):
        return f"{_module_import_name(obj.__module__)}:{obj.__qualname__}"
    raise TypeError(
        f"{what} must be a {base.__name__} subclass or a 'module:Class' import path; "
        f"got {type(obj).__name__}"
    )


def _config_spec(config: Any, what: str, owner: str | None) -> dict[str, Any] | None:
    """How the sandbox rebuilds a config: by import path, or from its JSON dump."""
    if config is None:
        return None
    if isinstance(config, str):
        if ":" not in config:
            raise ValueError(f"{what}={config!r} must be a config object or 'module:attr'")
        return {"kind": "import", "path": config}
    candidates = [type(config).__module__]
    if owner:
        candidates.insert(0, owner.partition(":")[0])
    candidates.append("__main__")
    for module_name in candidates:
        module = sys.modules.get(module_name)
        for attr, value in vars(module).items() if module is not None else ():
            if value is config and not attr.startswith("_"):
                return {"kind": "import", "path": f"{_module_import_name(module_name)}:{attr}"}
    dump = getattr(config, "model_dump", None)
    if callable(dump):
        try:
            data = dump(mode="json")
            json.dumps(data)
        except Exception as exc:
            raise ValueError(
                f"{what} holds values that cannot be sent to the sandbox ({exc}); define it at "
                f"module level and pass it as 'module:attr'"
            ) from exc
        cls = type(config)
        return {
            "kind": "json",
            "class": f"{_module_import_name(cls.__module__)}:{cls.__qualname__}",
            "data": data,
        }
    raise TypeError(f"{what} must be a config object (pydantic model) or 'module:attr'")


def _project_dir_of(import_path: str) -> Path:
    """The directory that must be on ``sys.path`` for ``import_path`` to import."""
    module_name = import_path.partition(":")[0]
    if module_name == Path(getattr(sys.modules.get("__main__"), "__file__", "") or "").stem:
        module = sys.modules.get(module_name) or sys.modules.get("__main__")
    else:
        module = sys.modules.get(module_name)
    if module is None:
        import importlib

        module = importlib.import_module(module_name)
    module_file = getattr(module, "__file__", None)
    if not module_file:
        raise ValueError(f"cannot locate the source of {module_name!r}; pass code_dir=")
    path = Path(module_file).resolve()
    depth = len(module_name.split("."))
    if path.name == "__init__.py":
        depth += 1
    return path.parents[depth - 1]


def _seconds(timing: Any) -> float | None:
    start: datetime | None = getattr(timing, "started_at", None)
    end: datetime | None = getattr(timing, "finished_at", None)
    if start is None or end is None:
        return None
    return round((end - start).total_seconds(), 4)


def trial_timings(result: TrialResult) -> dict[str, float | None]:
    """Seconds spent per trial phase (environment start, agent setup, agent, verifier)."""
    return {
        "environment_setup": _seconds(result.environment_setup),
        "agent_setup": _seconds(result.agent_setup),
        "agent_execution": _seconds(result.agent_execution),
        "verifier": _seconds(result.verifier),
    }


def _failure(message: str, category: RolloutErrorCategory, **extra: Any) -> ExecutionOutcome:
    return ExecutionOutcome(
        workflow=ExecutionResult(
            status=RolloutStatus.FAILURE,
            err_message=message,
            err_category=category,
            extra_fields=extra or None,
        )
    )


class HarborBackend(ExecutionBackend):
    """Runs every rollout as a Harbor trial (see the module docs for the data flow).

    ``agent`` is a native Harbor agent name (``oracle``, ``nop``, ``terminus-2``,
    ``mini-swe-agent``) or an ``AgentWorkflow`` class / ``"module:Class"``, which is bundled
    with its project (``code_dir``, default: the directory its module imports from) into a
    wheel and run inside the sandbox. ``grader`` (a ``Grader`` class / ``"module:Class"``) is
    used only for tasks without their own ``tests/test.sh``.
    """

    def __init__(
        self,
        *,
        orchestrator: TrialQueue,
        tasks_dir: Path | str,
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
        **legacy: Any,
    ) -> None:
        if legacy:
            raise TypeError(_legacy_message(legacy))
        from osmosis_ai.rollout.agent_workflow import AgentWorkflow
        from osmosis_ai.rollout.grader import Grader

        retry = getattr(orchestrator, "_retry_config", None)
        if not callable(getattr(orchestrator, "submit", None)) or not callable(
            getattr(orchestrator, "add_hook", None)
        ):
            raise TypeError("orchestrator must be a harbor.trial.queue.TrialQueue")
        if retry is not None and getattr(retry, "max_retries", 0) != 0:
            raise ValueError(
                "the TrialQueue must not retry: create it with "
                "TrialQueue(n_concurrent=..., retry_config=RetryConfig(max_retries=0)); a retry "
                "would run a second trial for one rollout"
            )
        self._queue = orchestrator
        self._tasks_dir = Path(tasks_dir).expanduser().resolve()
        if not self._tasks_dir.is_dir():
            raise ValueError(f"tasks_dir {self._tasks_dir} is not a directory")
        try:
            self._mode = TaskMode(task_mode)
        except ValueError:
            raise ValueError(
                f"task_mode={task_mode!r} is not valid; use 'template' or 'dataset'"
            ) from None
        if max_queue_depth is not None and max_queue_depth < 1:
            raise ValueError("max_queue_depth must be at least 1 (or None for no limit)")
        if patch_dockerfile_with_sdk:
            raise ValueError(
                "patch_dockerfile_with_sdk is not supported: pre-install the rollout's "
                "dependencies in the task image (optionally in /opt/osmosis/venv, which the "
                "bundle installer prefers)"
            )
        if agent is None:
            raise ValueError(
                "agent= is required: a native Harbor agent "
                f"({', '.join(NATIVE_AGENTS)}) or an AgentWorkflow class / 'module:Class'"
            )
        self._native: str | None = None
        spec = _Spec()
        if isinstance(agent, str) and ":" not in agent:
            if agent not in NATIVE_AGENTS:
                raise ValueError(
                    f"agent={agent!r} is not a supported native agent ({', '.join(NATIVE_AGENTS)}) "
                    "and not a 'module:Class' import path of an AgentWorkflow"
                )
            self._native = agent
            if agent == "oracle":
                logger.warning(
                    "agent='oracle' runs each task's reference solution and calls no model: "
                    "use it to validate tasks, never for training"
                )
        else:
            if native_agent_kwargs:
                raise ValueError(
                    "native_agent_kwargs only apply to native agents "
                    f"({', '.join(NATIVE_AGENTS)}); configure a workflow with workflow_config="
                )
            spec.workflow = _import_path_of(agent, "agent", AgentWorkflow)
            spec.workflow_config = _config_spec(workflow_config, "workflow_config", spec.workflow)
        if grader is not None:
            spec.grader = _import_path_of(grader, "grader", Grader)
            spec.grader_config = _config_spec(grader_config, "grader_config", spec.grader)
        self._spec = spec
        self._native_kwargs = dict(native_agent_kwargs or {})
        # Harbor writes agent kwargs verbatim into the trial dir: remember key-like values so
        # they are scrubbed along with the rollout's own key.
        self._kwarg_secrets = tuple(_secret_values(self._native_kwargs))
        self._model_name = model_name
        self._environment = environment_config
        self._cleanup = cleanup_successful_trials
        self._setup_timeout = agent_setup_timeout_sec
        self._max_queue_depth = max_queue_depth
        self._agent_label = self._native or spec.workflow or ""

        self._code_dir: Path | None = None
        if spec.workflow or spec.grader:
            if code_dir is not None:
                self._code_dir = Path(code_dir).expanduser().resolve()
            else:
                self._code_dir = _project_dir_of(spec.workflow or spec.grader or "")
        self._bundle: Bundle | None = None
        if bundle is not None:
            wheel = Path(bundle).expanduser().resolve()
            match = _BUNDLE_NAME.match(wheel.name)
            if not wheel.is_file() or match is None:
                raise ValueError(
                    f"bundle={wheel} must be an osmosis bundle wheel "
                    "(osmosis_bundle_<digest>-...whl) built by osmosis-harbor"
                )
            self._bundle = Bundle(wheel=wheel, package=match[1], digest=match[1][-16:])
        self._bundle_lock = asyncio.Lock()

        self._owned_work_dir = Path(
            tempfile.mkdtemp(prefix=f"osmosis-harbor-{self._tasks_dir.name[:32]}-")
        )
        self._trials_dir = (
            Path(trials_dir).expanduser().resolve()
            if trials_dir is not None
            else self._owned_work_dir / "trials"
        )
        self._staging_root = self._owned_work_dir / "rollouts"
        # A process that exits without shutdown() (or never ran a rollout) leaves no empty dirs.
        weakref.finalize(
            self,
            _remove_empty_dirs,
            [self._staging_root, self._owned_work_dir / "trials", self._owned_work_dir],
        )
        self._rollouts: dict[str, _Rollout] = {}
        self._by_trial: dict[str, _Rollout] = {}
        self._finished: OrderedDict[str, _Finished] = OrderedDict()
        self._closed = False
        for event_name, hook in (
            ("START", self._on_start),
            ("VERIFICATION_START", self._on_verification_start),
        ):
            from harbor.trial.hooks import TrialEvent

            orchestrator.add_hook(getattr(TrialEvent, event_name), hook)

    # --- public surface -------------------------------------------------------------------

    @property
    def trials_dir(self) -> Path:
        return self._trials_dir

    def has_capacity(self) -> bool:
        if self._closed:
            return False
        if self._max_queue_depth is None:
            return True
        return self._count(RolloutStatus.QUEUED) < self._max_queue_depth

    def health(self) -> dict[str, Any]:
        running = sum(1 for r in self._rollouts.values() if r.status != RolloutStatus.QUEUED)
        environment = self._environment
        env_name = "docker"
        if environment is not None:
            env_type = getattr(environment, "type", None)
            env_name = str(getattr(env_type, "value", env_type) or "custom")
            if environment.import_path == LOCAL_ENVIRONMENT_IMPORT_PATH:
                env_name = "local"
        return {
            "status": "ok" if not self._closed else "shutting_down",
            "backend": "harbor",
            "agent": self._agent_label,
            "task_mode": str(self._mode),
            "in_flight": len(self._rollouts),
            "running": running,
            "queued": self._count(RolloutStatus.QUEUED),
            "max_queue_depth": self._max_queue_depth,
            "chat_endpoint": {
                "environment": env_name,
                # Only the local sandbox shares the host's network (loopback works there).
                "requires_public_url": env_name not in ("local", "custom"),
            },
        }

    def rollout_status(self, rollout_id: str) -> dict[str, Any] | None:
        live = self._rollouts.get(rollout_id)
        if live is not None:
            return {"status": str(live.status)}
        self._expire()
        done = self._finished.get(rollout_id)
        return dict(done.payload) if done is not None else None

    def cancel_rollouts(
        self, ids: list[str] | None = None, prefix: str | None = None, all: bool = False
    ) -> dict[str, str]:
        if all:
            selected = list(self._rollouts)
        elif prefix is not None:
            selected = [rid for rid in self._rollouts if rid.startswith(prefix)]
        else:
            selected = list(ids or [])
        dispositions: dict[str, str] = {}
        for rid in selected:
            record = self._rollouts.get(rid)
            if record is None or record.status.is_terminal:
                dispositions[rid] = NOT_FOUND
                continue
            dispositions[rid] = (
                CANCELLED_QUEUED if record.status == RolloutStatus.QUEUED else CANCELLED_RUNNING
            )
            record.cancel_requested = True
            if record.trial_task is not None:
                record.trial_task.cancel()
        return dispositions

    async def shutdown(self) -> None:
        self._closed = True
        tasks = [r.trial_task for r in self._rollouts.values() if r.trial_task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.to_thread(shutil.rmtree, self._staging_root, True)
        # Failed trials are kept for diagnosis; an otherwise empty work dir is removed.
        _remove_empty_dirs([self._owned_work_dir / "trials", self._owned_work_dir])

    async def prewarm(self) -> dict[str, Any]:
        """Build the bundle and, in template mode, run one ``install_only`` trial so images
        are built and the agent is installed before the first rollout arrives."""
        summary: dict[str, Any] = {}
        started = time.perf_counter()
        bundle = await self._ensure_bundle()
        if bundle is not None:
            summary["bundle"] = bundle.wheel.name
        if self._mode is TaskMode.TEMPLATE:
            from harbor.models.trial.config import TaskConfig, TrialConfig, VerifierConfig

            staging = Path(tempfile.mkdtemp(prefix="prewarm-", dir=self._ensure_staging()))
            try:
                task_dir = materialize_task(self._tasks_dir, staging / self._tasks_dir.name)
                agent = self._agent_config(
                    request=ExecutionRequest(id="prewarm", prompt=[]),
                    url="http://127.0.0.1:9/prewarm",
                    api_key=None,
                    bundle=bundle,
                    task_dir=task_dir,
                )
                config = TrialConfig(
                    task=TaskConfig(path=task_dir),
                    trial_name=f"osmosis-prewarm-{staging.name[-8:].lower()}",
                    trials_dir=staging / "trials",
                    install_only=True,
                    agent=agent,
                    environment=self._environment_config(),
                    verifier=VerifierConfig(disable=True),
                )
                result = await self._queue.submit(config)
                summary["install_trial"] = (
                    "ok" if result.exception_info is None else result.exception_info.exception_type
                )
            finally:
                await asyncio.to_thread(shutil.rmtree, staging, True)
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

    async def execute(self, request: ExecutionRequest) -> ExecutionOutcome:
        if self._closed:
            return _failure("the backend is shutting down", RolloutErrorCategory.INTERNAL_ERROR)
        if request.id in self._rollouts:
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
        ctx = get_rollout_context()
        if ctx is None or (ctx.rollout_id and ctx.rollout_id != request.id):
            ctx = RolloutContext(rollout_id=request.id)
        record = _Rollout(
            id=request.id,
            trial_name=trial_name_for(request.id),
            context=ctx,
            secrets=tuple(s for s in (ctx.api_key, *self._kwarg_secrets) if s),
        )
        self._rollouts[request.id] = record
        self._by_trial[record.trial_name] = record
        prepared: _Prepared | None = None
        try:
            try:
                prepared = await self._prepare(request, record, ctx)
            except (TaskSelectionError, BundleError, ValueError, TypeError) as exc:
                category = (
                    RolloutErrorCategory.INTERNAL_ERROR
                    if isinstance(exc, BundleError)
                    else RolloutErrorCategory.VALIDATION_ERROR
                )
                return self._finish(record, _failure(str(exc), category), None)
            if record.cancel_requested:
                return self._finish(record, self._cancelled(), None)
            record.trials_dir = prepared.trial.trials_dir
            record.trial_task = asyncio.ensure_future(self._queue.submit(prepared.trial))
            timer = self._arm_queue_deadline(record, request, admitted)
            try:
                result = await record.trial_task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    self._cleanup_after(record, prepared, keep_trial=True)
                    raise
                if record.deadline_passed:
                    return self._finish(
                        record,
                        _failure(
                            "the agent deadline passed while the rollout waited for a trial slot",
                            RolloutErrorCategory.TIMEOUT,
                        ),
                        prepared,
                    )
                return self._finish(record, self._cancelled(), prepared, keep_trial=True)
            finally:
                if timer is not None:
                    timer.cancel()
            outcome = await asyncio.to_thread(self._outcome, request, record, prepared, result)
            keep = outcome.result.status != RolloutStatus.SUCCESS or not self._cleanup
            return self._finish(record, outcome, prepared, keep_trial=keep, result=result)
        except asyncio.CancelledError:
            self._forget(record)
            raise
        except Exception as exc:  # a bug or an infrastructure failure, never reward 0
            logger.exception("harbor rollout %s failed", request.id)
            return self._finish(
                record,
                _failure(f"harbor backend error: {exc}", RolloutErrorCategory.INTERNAL_ERROR),
                prepared,
                keep_trial=True,
            )

    def _arm_queue_deadline(
        self, record: _Rollout, request: ExecutionRequest, admitted: float
    ) -> asyncio.TimerHandle | None:
        """The agent budget counts from admission: a trial still queued when it runs out is
        withdrawn as a timeout. Once started, Harbor enforces the agent phase's own timeout."""
        if request.agent_timeout_sec is None:
            return None

        def expire() -> None:
            if record.status == RolloutStatus.QUEUED and record.trial_task is not None:
                record.deadline_passed = True
                record.trial_task.cancel()

        loop = asyncio.get_running_loop()
        return loop.call_at(admitted + request.agent_timeout_sec, expire)

    def _cancelled(self) -> ExecutionOutcome:
        return ExecutionOutcome(
            workflow=ExecutionResult(status=RolloutStatus.CANCELLED, err_message="cancelled")
        )

    def _count(self, status: RolloutStatus) -> int:
        return sum(1 for r in self._rollouts.values() if r.status == status)

    def _ensure_staging(self) -> Path:
        self._staging_root.mkdir(parents=True, exist_ok=True)
        return self._staging_root

    async def _ensure_bundle(self) -> Bundle | None:
        if self._code_dir is None:
            return None
        async with self._bundle_lock:
            if self._bundle is None:
                exclude = (self._trials_dir, self._owned_work_dir)
                self._bundle = await asyncio.to_thread(
                    build_bundle, self._code_dir, self._spec.as_json(), exclude=exclude
                )
        return self._bundle

    def _environment_config(self) -> EnvironmentConfig:
        if self._environment is not None:
            return self._environment.model_copy(deep=True)
        from harbor.models.trial.config import EnvironmentConfig

        return EnvironmentConfig()

    def _agent_config(
        self,
        *,
        request: ExecutionRequest,
        url: str,
        api_key: str | None,
        bundle: Bundle | None,
        task_dir: Path,
    ) -> AgentConfig:
        from harbor.models.trial.config import AgentConfig

        allowed = _allowlist_hosts(task_dir, url)
        if self._native is not None:
            config = native_agent_config(
                self._native,
                model_name=self._model_name,
                chat_completions_url=url,
                api_key=api_key,
                extra_kwargs=self._native_kwargs,
                extra_allowed_hosts=allowed,
            )
        else:
            assert bundle is not None
            env = {"OSMOSIS_CHAT_COMPLETIONS_URL": url, "OSMOSIS_ROLLOUT_ID": request.id}
            if api_key:
                env["OSMOSIS_API_KEY"] = api_key
            config = AgentConfig(
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
            config.override_timeout_sec = max(request.agent_timeout_sec, 0.001)
        if self._setup_timeout is not None:
            config.override_setup_timeout_sec = self._setup_timeout
        return config

    async def _prepare(
        self, request: ExecutionRequest, record: _Rollout, ctx: RolloutContext
    ) -> _Prepared:
        from harbor.models.trial.config import TaskConfig, TrialConfig, VerifierConfig

        source = select_task(mode=self._mode, tasks_dir=self._tasks_dir, metadata=request.metadata)
        source_dir = await fetch_task(source)
        bundle = await self._ensure_bundle()
        staging = self._ensure_staging() / record.trial_name
        await asyncio.to_thread(shutil.rmtree, staging, True)
        task_dir = await asyncio.to_thread(materialize_task, source_dir, staging / source_dir.name)
        if self._mode is TaskMode.TEMPLATE and source.kind == "local" and request.prompt:
            (task_dir / "instruction.md").write_text(render_instruction(request.prompt))
        if not (task_dir / "instruction.md").is_file():
            raise TaskSelectionError(
                f"task {source.description} has no instruction.md and the request has no prompt"
            )
        if self._native is None and not ctx.chat_completions_url:
            raise ValueError(
                "no policy endpoint: run the rollout inside a RolloutContext with "
                "chat_completions_url (the rollout server does this) or set "
                "OSMOSIS_CHAT_COMPLETIONS_URL"
            )
        graded_by = "none"
        if task_has_verifier(task_dir):
            graded_by = "task"
        elif self._spec.grader is not None and bundle is not None:
            await asyncio.to_thread(self._install_sdk_verifier, task_dir, request, bundle)
            graded_by = "sdk"
        verifier = VerifierConfig(disable=not request.grade or graded_by == "none")
        if request.grader_timeout_sec is not None:
            verifier.override_timeout_sec = max(request.grader_timeout_sec, 0.001)
        trial = TrialConfig(
            task=TaskConfig(path=task_dir),
            trial_name=record.trial_name,
            trials_dir=self._trials_dir,
            agent=self._agent_config(
                request=request,
                url=ctx.chat_completions_url,
                api_key=ctx.api_key,
                bundle=bundle,
                task_dir=task_dir,
            ),
            environment=self._environment_config(),
            verifier=verifier,
        )
        return _Prepared(
            trial=trial, staging=staging, graded_by=graded_by, native=self._native is not None
        )

    def _install_sdk_verifier(
        self, task_dir: Path, request: ExecutionRequest, bundle: Bundle
    ) -> None:
        """Write ``tests/test.sh`` that runs the SDK grader (only for tasks without one)."""
        tests = task_dir / "tests"
        osmosis_dir = tests / "osmosis"
        osmosis_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy2(bundle.wheel, osmosis_dir / bundle.wheel.name)
        (osmosis_dir / "grader_input.json").write_text(
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
        wheel_in_sandbox = f"/tests/osmosis/{bundle.wheel.name}"
        script = (
            "#!/bin/bash\n"
            "# Generated by osmosis-harbor: runs the rollout's SDK grader.\n"
            'PY="$(cat /opt/osmosis/python 2>/dev/null)"\n'
            f'if [ -z "$PY" ] || ! "$PY" -c "import {bundle.package}" 2>/dev/null; then\n'
            "(\n"
            f"{install_script(wheel_in_sandbox)}"
            ") || exit 3\n"
            '  PY="$(cat /opt/osmosis/python)"\n'
            "fi\n"
            f'exec "$PY" -m {bundle.package} grade\n'
        )
        path = tests / "test.sh"
        path.write_text(script)
        path.chmod(0o755)

    # --- hooks ----------------------------------------------------------------------------

    async def _on_start(self, event: TrialHookEvent) -> None:
        record = self._by_trial.get(event.trial_name)
        if record is None:
            return
        record.status = RolloutStatus.RUNNING
        if record.trials_dir is not None and record.secrets:
            config_json = record.trials_dir / record.trial_name / "config.json"
            await asyncio.to_thread(scrub_paths, [config_json], record.secrets)
        if record.context is not None:
            await record.context.set_status(RolloutStatus.RUNNING)

    async def _on_verification_start(self, event: TrialHookEvent) -> None:
        record = self._by_trial.get(event.trial_name)
        if record is None:
            return
        record.status = RolloutStatus.GRADING
        if record.context is not None:
            await record.context.set_status(RolloutStatus.GRADING)

    # --- results --------------------------------------------------------------------------

    def _outcome(
        self,
        request: ExecutionRequest,
        record: _Rollout,
        prepared: _Prepared,
        result: TrialResult,
    ) -> ExecutionOutcome:
        trial_dir = prepared.trial.trials_dir / record.trial_name
        scrub_tree(trial_dir, record.secrets)
        extra: dict[str, Any] = {
            "harbor_trial": record.trial_name,
            "harbor_timings": trial_timings(result),
            "harbor_graded_by": prepared.graded_by,
        }
        exc = result.exception_info
        exc_type = exc.exception_type if exc is not None else None
        if exc is not None:
            extra["harbor_exception"] = exc_type
        verifier_failed = exc_type in _VERIFIER_EXCEPTIONS
        if exc is not None and not verifier_failed:
            if exc_type == "AgentTimeoutError":
                category = RolloutErrorCategory.TIMEOUT
            elif result.agent_execution is None:
                category = RolloutErrorCategory.INTERNAL_ERROR
            else:
                category = RolloutErrorCategory.AGENT_ERROR
            message = f"{exc_type}: {exc.exception_message}".strip()
            return ExecutionOutcome(
                workflow=ExecutionResult(
                    status=RolloutStatus.FAILURE,
                    err_message=message[:2000],
                    err_category=category,
                    extra_fields=extra,
                )
            )
        workflow = self._workflow_result(request, result, trial_dir, extra)
        if workflow.status != RolloutStatus.SUCCESS or not request.grade:
            return ExecutionOutcome(workflow=workflow)
        if prepared.graded_by == "none":
            grader = ExecutionResult(
                status=RolloutStatus.FAILURE,
                sample=workflow.sample,
                err_message=(
                    "nothing can grade this rollout: the task has no tests/test.sh and no "
                    "grader= was given to HarborBackend"
                ),
                err_category=RolloutErrorCategory.VALIDATION_ERROR,
                extra_fields=extra,
            )
            return ExecutionOutcome(workflow=workflow, grader=grader)
        return ExecutionOutcome(
            workflow=workflow,
            grader=self._grader_result(workflow, result, trial_dir, verifier_failed, extra),
        )

    def _workflow_result(
        self,
        request: ExecutionRequest,
        result: TrialResult,
        trial_dir: Path,
        extra: dict[str, Any],
    ) -> ExecutionResult:
        if self._native is not None:
            messages = contract._sample_from_atif(
                trial_dir / "agent" / "trajectory.json", request.prompt
            )
            sample = RolloutSample(
                messages=messages if messages is not None else list(request.prompt),
                label=request.label,
            )
            if self._native == "oracle":
                sample.extra_fields = {"trainable": False}
            return ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample, extra_fields=extra)
        metadata = result.agent_result.metadata if result.agent_result is not None else None
        payload = (metadata or {}).get(RESULT_METADATA_KEY)
        if not isinstance(payload, dict):
            return ExecutionResult(
                status=RolloutStatus.FAILURE,
                err_message="the rollout runner reported no result",
                err_category=RolloutErrorCategory.INTERNAL_ERROR,
                extra_fields=extra,
            )
        if payload.get("status") != "success":
            return ExecutionResult(
                status=RolloutStatus.FAILURE,
                err_message=payload.get("err_message") or "the workflow failed",
                err_category=_category(payload.get("err_category")),
                extra_fields=extra,
            )
        sample = None
        if payload.get("sample") is not None:
            sample = RolloutSample.model_validate(payload["sample"])
            sample.label = request.label
        return ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample, extra_fields=extra)

    def _grader_result(
        self,
        workflow: ExecutionResult,
        result: TrialResult,
        trial_dir: Path,
        verifier_failed: bool,
        extra: dict[str, Any],
    ) -> ExecutionResult:
        exc = result.exception_info
        if verifier_failed and exc is not None:
            error_file = trial_dir / "verifier" / Path(contract.GRADER_ERROR).name
            if error_file.is_file():
                details = json.loads(error_file.read_text())
                message = f"grader failed: {details.get('err_message')}"
                category = _category(details.get("err_category"))
            else:
                message = f"task verifier failed: {exc.exception_type}: {exc.exception_message}"
                category = (
                    RolloutErrorCategory.TIMEOUT
                    if exc.exception_type == "VerifierTimeoutError"
                    else RolloutErrorCategory.AGENT_ERROR
                )
            return ExecutionResult(
                status=RolloutStatus.FAILURE,
                sample=workflow.sample,
                err_message=message[:2000],
                err_category=category,
                extra_fields=extra,
            )
        rewards = result.verifier_result.rewards if result.verifier_result is not None else None
        reward: float | None = None
        if rewards:
            if "reward" in rewards:
                reward = float(rewards["reward"])
            elif len(rewards) == 1:
                reward = float(next(iter(rewards.values())))
        if reward is None or not math.isfinite(reward):
            return ExecutionResult(
                status=RolloutStatus.FAILURE,
                sample=workflow.sample,
                err_message=f"the verifier wrote no usable 'reward' (rewards: {rewards})",
                err_category=RolloutErrorCategory.VALIDATION_ERROR,
                extra_fields=extra,
            )
        extra["harbor_rewards"] = dict(rewards or {})
        sample = (
            workflow.sample.model_copy(deep=True)
            if workflow.sample is not None
            else RolloutSample(messages=[])
        )
        sample.reward = reward
        return ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample, extra_fields=extra)

    def _finish(
        self,
        record: _Rollout,
        outcome: ExecutionOutcome,
        prepared: _Prepared | None,
        *,
        keep_trial: bool = True,
        result: TrialResult | None = None,
    ) -> ExecutionOutcome:
        final = outcome.result
        payload: dict[str, Any] = {"status": str(final.status)}
        if final.sample is not None and final.sample.reward is not None:
            payload["reward"] = final.sample.reward
        if final.err_message:
            payload["err_message"] = final.err_message
        self._finished[record.id] = _Finished(payload, time.monotonic() + STATUS_RETENTION_SEC)
        self._expire()
        if prepared is not None:
            self._cleanup_after(record, prepared, keep_trial=keep_trial, result=result)
        self._forget(record)
        return outcome

    def _cleanup_after(
        self,
        record: _Rollout,
        prepared: _Prepared,
        *,
        keep_trial: bool,
        result: TrialResult | None = None,
    ) -> None:
        trial_dir = prepared.trial.trials_dir / record.trial_name
        try:
            if result is not None:
                from osmosis_ai.rollout.home import rollout_dir

                relocate_artifacts(trial_dir / "artifacts", rollout_dir(record.id) / "artifacts")
            scrub_tree(trial_dir, record.secrets)
            if not keep_trial:
                shutil.rmtree(trial_dir, ignore_errors=True)
        except OSError:
            logger.warning("could not tidy trial dir %s", trial_dir, exc_info=True)
        shutil.rmtree(prepared.staging, ignore_errors=True)

    def _forget(self, record: _Rollout) -> None:
        self._rollouts.pop(record.id, None)
        self._by_trial.pop(record.trial_name, None)

    def _expire(self) -> None:
        now = time.monotonic()
        while self._finished:
            rid, entry = next(iter(self._finished.items()))
            if entry.expires_at > now:
                break
            self._finished.pop(rid)


_SENSITIVE_NAME = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL|AUTH", re.IGNORECASE)


def _secret_values(value: Any, name: str = "") -> list[str]:
    """String values stored under key-like names (``api_key``, ``auth_token``...), recursively."""
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _secret_values(v, str(k))]
    if isinstance(value, list | tuple):
        return [s for item in value for s in _secret_values(item, name)]
    if isinstance(value, str) and name and _SENSITIVE_NAME.search(name):
        return [value]
    return []


def _remove_empty_dirs(directories: list[Path]) -> None:
    for directory in directories:
        with contextlib.suppress(OSError):
            directory.rmdir()


def _category(value: Any) -> RolloutErrorCategory:
    try:
        return RolloutErrorCategory(value)
    except ValueError:
        return RolloutErrorCategory.AGENT_ERROR


def _allowlist_hosts(task_dir: Path, url: str) -> list[str]:
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


def _legacy_message(legacy: dict[str, Any]) -> str:
    parts = []
    for name in sorted(legacy):
        replacement = _LEGACY_KWARGS.get(name)
        if replacement is None:
            parts.append(f"unexpected keyword argument {name!r}")
        else:
            parts.append(f"{name!r} was removed in osmosis 0.3; use {replacement}")
    return (
        "HarborBackend() got unsupported keyword arguments: "
        + "; ".join(parts)
        + f". See {MIGRATION_GUIDE}"
    )
