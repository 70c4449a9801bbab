"""``LocalBackend``: runs each rollout's workflow and grader in this process, on this event loop.

Behaviour (each point fixes a gap of the reference SDK):

* **Concurrency.** Unbounded by default: rollouts are I/O-bound waits on the policy, and the
  rollout server (``has_capacity``/429) and the training controller already decide how many are
  sent. A cap comes from ``max_concurrency=`` or else ``workflow_config.concurrency.max_concurrent``
  (no hidden default of 4). A rollout holds its slot through workflow and grading.
* **Queue.** With a cap, rollouts beyond it wait in FIFO order; ``max_queue_depth`` makes
  :meth:`has_capacity` report ``False`` once that many are waiting, so the server answers 429
  instead of queueing without bound. (Without a cap nothing ever waits, so ``max_queue_depth``
  only matters together with a concurrency cap.)
* **Status.** :meth:`rollout_status` reports ``queued``, ``running``, ``grading`` and the terminal
  ``success``/``failure``/``cancelled`` (with reward and error message). Finished records are
  kept for ``status_retention_sec`` (900 s) and at most ``status_retention_max`` (10,000).
* **Cancel.** :meth:`cancel_rollouts` really cancels queued and running rollouts; ``execute``
  then returns a ``cancelled`` outcome (message ``"cancelled"``).
* **Deadlines.** ``agent_timeout_sec`` counts from the call to :meth:`execute`, so time spent
  queued uses up the budget: ``"workflow exceeded its 5s deadline (2.3s of it spent queued)"``.
  The grader has its own ``grader_timeout_sec``: ``"grader exceeded its 5s deadline"``. Both are
  ``timeout`` failures; code that swallows the cancellation or blocks past the deadline is still
  reported as a timeout.
* **Grading.** When a grader is configured and ``request.grade`` is true, it runs after every
  successful workflow, even without a label (``ctx.label is None``) or without a sample (then
  the grade fails saying so). It succeeds only with a sample carrying a finite reward, or with
  ``remove_sample=True``. Without a grader (or with ``grade=False``) the workflow's result is the
  result: ``success`` with ``reward: None``.
* **Failures** always carry a category (``timeout``, ``validation_error``, ``http_error``,
  ``agent_error``, ``internal_error``) and a message; :meth:`execute` never raises for them.
* **Isolation.** Each rollout gets a fresh workflow instance built with a deep copy of
  ``workflow_config`` (fields that cannot be deep-copied are shared, and so are instances of
  types an integration registered with :func:`~osmosis_ai.rollout.backend.local.loading.
  share_in_config_copies`, e.g. stateless framework tool objects; see
  :class:`~osmosis_ai.rollout.backend.local.loading.ConfigCopier`) and a fresh grader instance.
* **Artifacts.** Workflow and grader get the same ``<home>/<rollout_id>/artifacts/``, created
  on first use (:mod:`~osmosis_ai.rollout.backend.local.artifacts`).
* **Sample.** An explicit return value becomes ``RolloutSample(messages, label=request.label,
  metrics)``; ``None`` asks the rollout's registered sample source (an integration's agent or
  session); a source's sample without a label gets ``request.label``. ``AgentWorkflowOutput.info``
  goes to the result's diagnostics (``extra_fields["workflow_info"]``), never to the grader.

The caller of :meth:`execute` (the rollout server, :func:`osmosis_ai.testing.run_rollout`)
normally enters a :class:`RolloutContext` for the rollout; if none is active, or the active one
belongs to another rollout, LocalBackend enters one built from ``OSMOSIS_*`` environment
variables. Progress (``running``, ``grading``) is reported through ``RolloutContext.set_status``.
All methods must be called from the event loop thread that runs :meth:`execute`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from pathlib import Path
from typing import Any

from osmosis_ai.rollout._execution import (
    failure as _failure,
)
from osmosis_ai.rollout._execution import (
    run_grader_phase,
    run_workflow_phase,
    seconds,
    should_grade,
)
from osmosis_ai.rollout.agent_workflow import AgentWorkflow
from osmosis_ai.rollout.backend.base import (
    CANCELLED_QUEUED,
    CANCELLED_RUNNING,
    NOT_FOUND,
    ExecutionBackend,
)
from osmosis_ai.rollout.backend.local.artifacts import ArtifactsDir, artifacts_dir
from osmosis_ai.rollout.backend.local.loading import ConfigCopier, resolve
from osmosis_ai.rollout.backend.local.registry import (
    DEFAULT_RETENTION_MAX,
    DEFAULT_RETENTION_SEC,
    RolloutRecord,
    RolloutRegistry,
)
from osmosis_ai.rollout.context import RolloutContext, get_rollout_context
from osmosis_ai.rollout.errors import describe_exception
from osmosis_ai.rollout.grader import Grader
from osmosis_ai.rollout.home import osmosis_home
from osmosis_ai.rollout.types.config import BaseConfig
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest, ExecutionResult
from osmosis_ai.rollout.types.sample import RolloutSample

_SUCCESS = RolloutStatus.SUCCESS
_FAILURE = RolloutStatus.FAILURE
_CANCELLED = RolloutStatus.CANCELLED
_TIMEOUT = RolloutErrorCategory.TIMEOUT
_VALIDATION = RolloutErrorCategory.VALIDATION_ERROR


class _Cancelled(Exception):
    """Raised inside :meth:`LocalBackend.execute` when ``cancel_rollouts`` selected the rollout."""


async def _absorb_own_cancellation(task: asyncio.Task[Any] | None) -> None:
    """Consume the cancellation ``cancel_rollouts`` requested, so it cannot leak to the caller.

    The request may still be pending (not yet delivered as ``CancelledError``) when the rollout
    ended on its own; one loop iteration delivers it. If the caller *also* cancelled the task,
    its cancellation is re-raised.
    """
    if task is None:
        return
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.sleep(0)
    if task.cancelling():
        task.uncancel()
    if task.cancelling():
        raise asyncio.CancelledError


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
        status_retention_sec: float = DEFAULT_RETENTION_SEC,
        status_retention_max: int = DEFAULT_RETENTION_MAX,
        artifact_root: Path | str | None = None,
    ) -> None:
        workflow_cls = resolve(workflow)
        if not (isinstance(workflow_cls, type) and issubclass(workflow_cls, AgentWorkflow)):
            hint = (
                "; pass the class itself: LocalBackend creates a fresh instance per rollout"
                if isinstance(workflow_cls, AgentWorkflow)
                else ""
            )
            raise TypeError(
                f"workflow must be an AgentWorkflow subclass or 'module:Class'; got {workflow_cls!r}{hint}"
            )
        grader_cls = resolve(grader)
        if grader_cls is not None and not (
            isinstance(grader_cls, type) and issubclass(grader_cls, Grader)
        ):
            hint = (
                "; pass the class itself: LocalBackend creates a fresh instance per rollout"
                if isinstance(grader_cls, Grader)
                else ""
            )
            raise TypeError(
                f"grader must be a Grader subclass or 'module:Class'; got {grader_cls!r}{hint}"
            )
        wf_config = resolve(workflow_config)
        gr_config = resolve(grader_config)
        for name, value in (("workflow_config", wf_config), ("grader_config", gr_config)):
            if value is not None and not isinstance(value, BaseConfig):
                raise TypeError(
                    f"{name} must be an AgentWorkflowConfig/GraderConfig instance or 'module:attr'; "
                    f"got {type(value).__name__}"
                )
        if max_concurrency is None and wf_config is not None:
            concurrency = getattr(wf_config, "concurrency", None)
            max_concurrency = getattr(concurrency, "max_concurrent", None)
        if max_concurrency is not None and (
            isinstance(max_concurrency, bool)
            or not isinstance(max_concurrency, int)
            or max_concurrency < 1
        ):
            raise ValueError("max_concurrency must be an integer >= 1, or None for no cap")
        if max_queue_depth is not None and (
            isinstance(max_queue_depth, bool)
            or not isinstance(max_queue_depth, int)
            or max_queue_depth < 1
        ):
            raise ValueError(
                "max_queue_depth must be an integer >= 1, or None for an unbounded queue"
            )
        if not math.isfinite(status_retention_sec):
            raise ValueError("status_retention_sec must be finite")

        self.workflow_cls: type[AgentWorkflow[Any]] = workflow_cls
        self.grader_cls: type[Grader] | None = grader_cls
        self.workflow_config = wf_config
        self.grader_config = gr_config
        self.max_concurrency: int | None = max_concurrency
        self.max_queue_depth: int | None = max_queue_depth
        self._artifact_root = Path(artifact_root).expanduser() if artifact_root else None
        self._config_copier = ConfigCopier(wf_config)
        self._semaphore: asyncio.Semaphore | None = (
            asyncio.Semaphore(max_concurrency) if max_concurrency is not None else None
        )
        self._registry = RolloutRegistry(
            retention_sec=status_retention_sec, retention_max=status_retention_max
        )
        self._shut_down = False

    # -- ExecutionBackend ------------------------------------------------------------------

    async def execute(self, request: ExecutionRequest) -> ExecutionOutcome:
        registry = self._registry
        if self._shut_down:
            return ExecutionOutcome(
                _failure(RolloutErrorCategory.INTERNAL_ERROR, "LocalBackend is shut down")
            )
        rollout_id = request.id
        if rollout_id in registry.active:
            return ExecutionOutcome(
                _failure(
                    _VALIDATION,
                    f"rollout {rollout_id!r} is already executing in this backend; "
                    "rollout ids must be unique while in flight",
                )
            )
        loop = asyncio.get_running_loop()
        admitted_at = loop.time()
        task = asyncio.current_task()
        record = RolloutRecord(status=RolloutStatus.QUEUED, task=task)
        registry.active[rollout_id] = record
        registry.queued += 1

        ctx = get_rollout_context()
        own_ctx: RolloutContext | None = None
        if ctx is None or ctx.rollout_id != rollout_id:
            own_ctx = ctx = RolloutContext(rollout_id=rollout_id)
            own_ctx.__enter__()
        try:
            try:
                outcome = await self._execute(request, record, ctx, admitted_at)
            except (asyncio.CancelledError, _Cancelled):
                if not record.cancel_requested:
                    raise  # the caller cancelled us: propagate
                await _absorb_own_cancellation(task)
                outcome = ExecutionOutcome(
                    ExecutionResult(status=_CANCELLED, err_message="cancelled")
                )
            except Exception as exc:  # a bug in LocalBackend itself; never blame rollout code
                outcome = ExecutionOutcome(
                    _failure(
                        RolloutErrorCategory.INTERNAL_ERROR,
                        f"LocalBackend internal error: {describe_exception(exc)}",
                    )
                )
            else:
                if record.cancel_requested:
                    # The rollout code swallowed the cancellation; it was still cancelled.
                    await _absorb_own_cancellation(task)
                    outcome = ExecutionOutcome(
                        ExecutionResult(status=_CANCELLED, err_message="cancelled")
                    )
        except BaseException:
            self._finish(rollout_id, record, _CANCELLED, None, "cancelled")
            raise
        finally:
            if own_ctx is not None:
                own_ctx.__exit__(None, None, None)
        result = outcome.result
        self._finish(rollout_id, record, result.status, result.wire_reward, result.err_message)
        return outcome

    def _finish(
        self,
        rollout_id: str,
        record: RolloutRecord,
        status: RolloutStatus,
        reward: float | None,
        err_message: str | None,
    ) -> None:
        registry = self._registry
        if record.status is RolloutStatus.QUEUED:
            registry.queued -= 1
        elif record.status is RolloutStatus.GRADING:
            registry.grading -= 1
        record.status = status
        record.reward = reward
        record.err_message = err_message
        registry.finish(rollout_id, record)

    async def _execute(
        self,
        request: ExecutionRequest,
        record: RolloutRecord,
        ctx: RolloutContext,
        admitted_at: float,
    ) -> ExecutionOutcome:
        semaphore = self._semaphore
        artifacts = self._artifacts(request.id)
        try:
            workflow_result = await self._run_workflow(
                request, record, ctx, admitted_at, semaphore, artifacts
            )
            if not should_grade(
                grade=request.grade,
                has_grader=self.grader_cls is not None,
                workflow=workflow_result,
            ):
                return ExecutionOutcome(workflow_result)
            self._registry.grading += 1
            record.status = RolloutStatus.GRADING
            await ctx.set_status(RolloutStatus.GRADING)
            grader_result = await self._run_grader(request, workflow_result.sample, artifacts)
            return ExecutionOutcome(workflow_result, grader_result)
        finally:
            # Released here, whatever ended the rollout (including cancellation mid-workflow).
            if record.holds_slot and semaphore is not None:
                record.holds_slot = False
                semaphore.release()

    def _artifacts(self, rollout_id: str) -> ArtifactsDir:
        root = self._artifact_root if self._artifact_root is not None else osmosis_home()
        return artifacts_dir(root, rollout_id)

    async def _run_workflow(
        self,
        request: ExecutionRequest,
        record: RolloutRecord,
        ctx: RolloutContext,
        admitted_at: float,
        semaphore: asyncio.Semaphore | None,
        artifacts: ArtifactsDir,
    ) -> ExecutionResult:
        """Wait for a slot and run the workflow, all within the agent deadline."""
        loop = asyncio.get_running_loop()
        timeout = request.agent_timeout_sec
        deadline = None if timeout is None else admitted_at + timeout
        started_at: float | None = admitted_at if semaphore is None else None
        if deadline is not None and loop.time() >= deadline:
            # Already expired on arrival (zero or negative budget): do not start the workflow.
            self._registry.queued -= 1
            record.status = RolloutStatus.RUNNING
            return _failure(_TIMEOUT, self._deadline_message(timeout, admitted_at, started_at))
        if semaphore is not None:
            try:
                async with asyncio.timeout_at(deadline):
                    await semaphore.acquire()
            except TimeoutError:
                if record.cancel_requested:
                    raise _Cancelled from None
                return _failure(_TIMEOUT, self._deadline_message(timeout, admitted_at, None))
            record.holds_slot = True
            started_at = loop.time()
        self._registry.queued -= 1
        record.status = RolloutStatus.RUNNING
        await ctx.set_status(RolloutStatus.RUNNING)
        if record.cancel_requested:
            raise _Cancelled
        result = await run_workflow_phase(
            lambda: self.workflow_cls(self._config_copier.copy()),
            prompt=request.prompt,
            metadata=request.metadata,
            label=request.label,
            artifacts_dir=artifacts,
            rollout=ctx,
            deadline=deadline,
            deadline_message=(
                "" if timeout is None else self._deadline_message(timeout, admitted_at, started_at)
            ),
        )
        if record.cancel_requested:
            raise _Cancelled
        return result

    @staticmethod
    def _deadline_message(
        timeout: float | None, admitted_at: float, started_at: float | None
    ) -> str:
        message = f"workflow exceeded its {seconds(timeout or 0.0)}s deadline"
        if started_at is None:  # never left the queue
            started_at = asyncio.get_running_loop().time()
        queued = started_at - admitted_at
        if queued >= 0.1:
            message += f" ({queued:.1f}s of it spent queued)"
        return message

    async def _run_grader(
        self,
        request: ExecutionRequest,
        workflow_sample: RolloutSample | None,
        artifacts: ArtifactsDir,
    ) -> ExecutionResult:
        grader_cls = self.grader_cls
        assert grader_cls is not None
        return await run_grader_phase(
            lambda: grader_cls(self.grader_config),  # type: ignore[arg-type]
            workflow_sample=workflow_sample,
            label=request.label,
            metadata=request.metadata,
            artifacts_dir=artifacts,
            timeout=request.grader_timeout_sec,
        )

    def has_capacity(self) -> bool:
        return self.max_queue_depth is None or self._registry.queued < self.max_queue_depth

    def rollout_status(self, rollout_id: str) -> dict[str, Any] | None:
        record = self._registry.get(rollout_id)
        return record.as_status() if record is not None else None

    def cancel_rollouts(
        self, ids: list[str] | None = None, prefix: str | None = None, all: bool = False
    ) -> dict[str, str]:
        selectors = sum((ids is not None, prefix is not None, bool(all)))
        if selectors != 1:
            raise ValueError("cancel_rollouts takes exactly one of ids=, prefix= or all=True")
        registry = self._registry
        registry.prune()
        if ids is not None:
            selected = list(dict.fromkeys(ids))
        elif prefix is not None:
            selected = [i for i in (*registry.active, *registry.finished) if i.startswith(prefix)]
        else:
            selected = [*registry.active, *registry.finished]
        dispositions: dict[str, str] = {}
        for rollout_id in selected:
            record = registry.active.get(rollout_id)
            if record is None or record.task is None:
                dispositions[rollout_id] = NOT_FOUND
                continue
            if not record.cancel_requested:
                record.cancel_requested = True
                record.task.cancel()
                record.cancel_disposition = (
                    CANCELLED_QUEUED if record.status is RolloutStatus.QUEUED else CANCELLED_RUNNING
                )
            dispositions[rollout_id] = record.cancel_disposition
        return dispositions

    def health(self) -> dict[str, Any]:
        registry = self._registry
        registry.prune()
        in_flight = len(registry.active)
        return {
            "status": "ok",
            "concurrency": {
                "max_concurrent": self.max_concurrency,
                "queued": registry.queued,
                "running": in_flight - registry.queued,
            },
            "backend": "local",
            "in_flight": in_flight,
            "grading": registry.grading,
            "max_queue_depth": self.max_queue_depth,
            "retained_results": len(registry.finished),
            "accepting": not self._shut_down,
        }

    async def shutdown(self) -> None:
        """Refuse new rollouts and cancel the in-flight ones."""
        self._shut_down = True
        if self._registry.active:
            self.cancel_rollouts(all=True)
