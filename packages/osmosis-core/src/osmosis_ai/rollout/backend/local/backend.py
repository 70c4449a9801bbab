"""``LocalBackend``: runs each rollout's workflow and grader in this process, on this event loop.

Behaviour (each point fixes a gap of the reference SDK):

* **Concurrency.** Unbounded by default: rollouts are I/O-bound waits on the policy, and the
  rollout server (``has_capacity``/429) and the training controller already decide how many are
  sent. A cap comes from ``max_concurrency=`` or else ``workflow_config.concurrency.max_concurrent``
  (no hidden default of 4). A rollout holds its slot through workflow and grading; the slots
  and their counts are :attr:`LocalBackend.limiter` (0.3.8's name).
* **Queue.** With a cap, rollouts beyond it wait in FIFO order; ``max_queue_depth`` makes
  :meth:`has_capacity` report ``False`` once that many are waiting, so the server answers 429
  instead of queueing without bound. (Without a cap nothing ever waits, so ``max_queue_depth``
  only matters together with a concurrency cap.)
* **Status.** The server's progress object (``execute(request, progress)``) is the one status:
  LocalBackend moves it to ``running`` only once the rollout holds a slot, and to ``grading``
  before the grader. It keeps no per-rollout records of its own.
* **Cancel.** Cancelling the task awaiting :meth:`execute` cancels the rollout, queued or
  running; its slot is released and ``CancelledError`` propagates. (The rollout server does
  this for ``POST /rollout/cancel``, lease expiry and shutdown.)
* **Deadlines.** ``agent_timeout_sec`` counts from the call to :meth:`execute`, so time spent
  queued uses up the budget: ``"workflow exceeded its 5s deadline (2.3s of it spent queued)"``.
  The grader has its own ``grader_timeout_sec``: ``"grader exceeded its 5s deadline"``. Both are
  ``timeout`` failures; code that swallows the cancellation or blocks past the deadline is still
  reported as a timeout.
* **Grading and rewards** follow the one execution engine (:mod:`osmosis_ai.rollout._execution`):
  the grader runs after every successful workflow when one is configured and ``request.grade``
  is true, even without a label; it succeeds only with a sample carrying a finite reward, or
  with ``remove_sample=True``. Without a grader (or with ``grade=False``) the workflow's result
  is the result: ``success`` with ``reward: None``.
* **Failures** always carry a category (``timeout``, ``validation_error``, ``http_error``,
  ``agent_error``, ``internal_error``) and a message; :meth:`execute` never raises for them.
* **Isolation.** Each rollout gets a fresh workflow instance built with a deep copy of
  ``workflow_config`` (fields that cannot be deep-copied are shared, and so are instances of
  types an integration registered with :func:`~osmosis_ai.rollout.backend.local._loading.
  share_in_config_copies`, e.g. stateless framework tool objects; see
  :class:`~osmosis_ai.rollout.backend.local._loading.ConfigCopier`) and a fresh grader instance.
* **Artifacts.** Workflow and grader get the same ``<artifact_root>/<rollout_id>/artifacts/``,
  created on first use (:mod:`~osmosis_ai.rollout.backend.local._artifacts`); ``artifact_root``
  defaults to the osmosis home at construction.
* **Context.** :meth:`execute` enters a :class:`~osmosis_ai.rollout.context.RolloutContext`
  built from the request (:func:`~osmosis_ai.rollout.context.rollout_context_for`) around the
  workflow, which is where integrations find the policy endpoint and register the sample source.

:meth:`run_workflow` and :meth:`run_grader` are the two phases as public coroutines (0.3.8), for
unit-testing a workflow's deadline behaviour without a slot. All methods must be called from
the event loop thread that runs :meth:`execute`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout._execution import (
    failure,
    run_grader_phase,
    run_workflow_phase,
    seconds,
    should_grade,
)
from osmosis_ai.rollout.agent_workflow import AgentWorkflow
from osmosis_ai.rollout.backend.base import ExecutionBackend
from osmosis_ai.rollout.backend.local._artifacts import ArtifactsDir, artifacts_dir
from osmosis_ai.rollout.backend.local._limiter import ConcurrencyLimiter
from osmosis_ai.rollout.backend.local._loading import ConfigCopier, resolve
from osmosis_ai.rollout.context import RolloutContext, get_rollout_context, rollout_context_for
from osmosis_ai.rollout.errors import describe_exception
from osmosis_ai.rollout.grader import Grader
from osmosis_ai.rollout.home import osmosis_home
from osmosis_ai.rollout.types.config import BaseConfig
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest, ExecutionResult

if TYPE_CHECKING:
    from osmosis_ai.rollout.context import RolloutProgress

_RUNNING = RolloutStatus.RUNNING
_GRADING = RolloutStatus.GRADING
_TIMEOUT = RolloutErrorCategory.TIMEOUT


def _check_class(name: str, value: Any, base: type) -> Any:
    if value is None and base is Grader:
        return None
    if isinstance(value, type) and issubclass(value, base):
        return value
    hint = (
        "; pass the class itself: LocalBackend creates a fresh instance per rollout"
        if isinstance(value, base)
        else ""
    )
    raise TypeError(
        f"{name} must be a{'n' if base is AgentWorkflow else ''} {base.__name__} subclass or "
        f"'module:Class'; got {value!r}{hint}"
    )


def _check_config(name: str, value: Any) -> Any:
    if value is not None and not isinstance(value, BaseConfig):
        raise TypeError(
            f"{name} must be an AgentWorkflowConfig/GraderConfig instance or 'module:attr'; "
            f"got {type(value).__name__}"
        )
    return value


def _check_limit(name: str, value: Any, none_means: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be an integer >= 1, or None for {none_means}")
    return value


def _deadline_message(timeout: float, queued_sec: float) -> str:
    message = f"workflow exceeded its {seconds(timeout)}s deadline"
    if queued_sec >= 0.1:
        message += f" ({queued_sec:.1f}s of it spent queued)"
    return message


class LocalBackend(ExecutionBackend):
    """Runs rollouts in-process; see the module docstring for the full behaviour."""

    def __init__(
        self,
        *,
        workflow: type[AgentWorkflow[Any]] | str,
        workflow_config: BaseConfig | str | None = None,
        grader: type[Grader] | str | None = None,
        grader_config: BaseConfig | str | None = None,
        max_concurrency: int | None = None,
        max_queue_depth: int | None = None,
        artifact_root: Path | str | None = None,
    ) -> None:
        self.workflow_cls: type[AgentWorkflow[Any]] = _check_class(
            "workflow", resolve(workflow), AgentWorkflow
        )
        self.grader_cls: type[Grader] | None = _check_class("grader", resolve(grader), Grader)
        self.workflow_config = _check_config("workflow_config", resolve(workflow_config))
        self.grader_config = _check_config("grader_config", resolve(grader_config))
        if max_concurrency is None and self.workflow_config is not None:
            concurrency = getattr(self.workflow_config, "concurrency", None)
            max_concurrency = getattr(concurrency, "max_concurrent", None)
        self.limiter = ConcurrencyLimiter(
            max_concurrent=_check_limit("max_concurrency", max_concurrency, "no cap")
        )
        self.max_queue_depth: int | None = _check_limit(
            "max_queue_depth", max_queue_depth, "an unbounded queue"
        )
        self.artifact_root: Path = (
            Path(artifact_root).expanduser() if artifact_root else osmosis_home()
        )
        self._config_copier = ConfigCopier(self.workflow_config)
        self._in_flight: set[str] = set()
        self._grading = 0
        self._shut_down = False

    @property
    def max_concurrency(self) -> int | None:
        return self.limiter.max_concurrent

    # -- ExecutionBackend ------------------------------------------------------------------

    async def execute(
        self, request: ExecutionRequest, progress: RolloutProgress | None = None
    ) -> ExecutionOutcome:
        if self._shut_down:
            return ExecutionOutcome(
                workflow=failure(RolloutErrorCategory.INTERNAL_ERROR, "LocalBackend is shut down")
            )
        rollout_id = request.id
        if rollout_id in self._in_flight:
            return ExecutionOutcome(
                workflow=failure(
                    RolloutErrorCategory.VALIDATION_ERROR,
                    f"rollout {rollout_id!r} is already executing in this backend; "
                    "rollout ids must be unique while in flight",
                )
            )
        admitted_at = asyncio.get_running_loop().time()
        self._in_flight.add(rollout_id)
        try:
            with rollout_context_for(request, progress):
                return await self._execute(request, progress, admitted_at)
        except Exception as exc:  # a bug in LocalBackend itself; never blame rollout code
            return ExecutionOutcome(
                workflow=failure(
                    RolloutErrorCategory.INTERNAL_ERROR,
                    f"LocalBackend internal error: {describe_exception(exc)}",
                )
            )
        finally:
            self._in_flight.discard(rollout_id)

    async def _execute(
        self, request: ExecutionRequest, progress: RolloutProgress | None, admitted_at: float
    ) -> ExecutionOutcome:
        limiter = self.limiter
        loop = asyncio.get_running_loop()
        timeout = request.agent_timeout_sec
        if timeout is None:
            await limiter.take()
        else:
            deadline = admitted_at + timeout
            if loop.time() >= deadline:
                # Expired on arrival (zero or negative budget): do not start the workflow.
                return ExecutionOutcome(workflow=failure(_TIMEOUT, _deadline_message(timeout, 0.0)))
            try:
                async with asyncio.timeout_at(deadline):
                    await limiter.take()
            except TimeoutError:
                queued = loop.time() - admitted_at
                return ExecutionOutcome(
                    workflow=failure(_TIMEOUT, _deadline_message(timeout, queued))
                )
        try:
            if progress is not None:
                await progress.set_status(_RUNNING)
            workflow = await self.run_workflow(request, queued_sec=loop.time() - admitted_at)
            if not should_grade(
                grade=request.grade, has_grader=self.grader_cls is not None, workflow=workflow
            ):
                return ExecutionOutcome(workflow=workflow)
            self._grading += 1
            try:
                if progress is not None:
                    await progress.set_status(_GRADING)
                graded = await self.run_grader(request, workflow)
                return ExecutionOutcome(workflow=workflow, grader=graded)
            finally:
                self._grading -= 1
        finally:
            limiter.give_back()

    def _artifacts(self, rollout_id: str) -> ArtifactsDir:
        return artifacts_dir(self.artifact_root, rollout_id)

    async def run_workflow(
        self, request: ExecutionRequest, *, queued_sec: float = 0.0
    ) -> ExecutionResult:
        """Run the workflow phase alone (no slot), its deadline shortened by ``queued_sec``.

        Runs in the active :class:`RolloutContext` (``execute`` enters one); called directly
        outside any, it enters one built from the request.
        """
        ctx = get_rollout_context()
        if ctx is None:
            with rollout_context_for(request) as own:
                return await self._workflow_phase(request, queued_sec, own)
        return await self._workflow_phase(request, queued_sec, ctx)

    async def _workflow_phase(
        self, request: ExecutionRequest, queued_sec: float, ctx: RolloutContext
    ) -> ExecutionResult:
        timeout = request.agent_timeout_sec
        deadline = None
        message = ""
        if timeout is not None:
            deadline = asyncio.get_running_loop().time() + timeout - queued_sec
            message = _deadline_message(timeout, queued_sec)
        copier = self._config_copier
        workflow_cls = self.workflow_cls
        return await run_workflow_phase(
            lambda: workflow_cls(copier.copy()),
            prompt=request.prompt,
            metadata=request.metadata,
            label=request.label,
            artifacts_dir=self._artifacts(request.id),
            rollout=ctx,
            deadline=deadline,
            deadline_message=message,
        )

    async def run_grader(
        self, request: ExecutionRequest, result: ExecutionResult
    ) -> ExecutionResult:
        """Grade ``result``'s sample (the grader phase alone); without a grader, ``result``."""
        grader_cls = self.grader_cls
        if grader_cls is None:
            return result
        config = self.grader_config
        return await run_grader_phase(
            lambda: grader_cls(config),  # type: ignore[arg-type]
            workflow_sample=result.sample,
            label=request.label,
            metadata=request.metadata,
            artifacts_dir=self._artifacts(request.id),
            timeout=request.grader_timeout_sec,
        )

    def has_capacity(self) -> bool:
        return self.has_capacity_for(0)

    def has_capacity_for(self, pending: int) -> bool:
        """Whether one more rollout would find a slot or a place within ``max_queue_depth``
        once the ``pending`` admitted ones (not in :meth:`execute` yet) have arrived."""
        depth = self.max_queue_depth
        limiter = self.limiter
        cap = limiter.max_concurrent
        if depth is None or cap is None:
            return True
        return limiter.running + limiter.queued + pending + 1 - cap <= depth

    def health(self) -> dict[str, Any]:
        return {
            "status": "ok",
            "concurrency": self.limiter.snapshot(),
            "backend": "local",
            "in_flight": len(self._in_flight),
            "grading": self._grading,
            "max_queue_depth": self.max_queue_depth,
            "accepting": not self._shut_down,
        }

    async def shutdown(self) -> None:
        """Refuse new rollouts (the server has already cancelled what was in flight)."""
        self._shut_down = True
