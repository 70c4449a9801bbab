"""The rollout service: one registry and one execution path for both wire protocols.

The HTTP layer (:mod:`..app`) only parses and answers; the service owns each rollout's
lifecycle: admission, the execution task (``backend.execute(request, progress)``, on the agent
loop: :mod:`.agent_loop`), the one status (the entry's progress), leases and their expiry, long
polls, cancellation, graceful drain and the outbox. Collaborators, each given the registry and
the few service steps it needs: :class:`~.admission.Admission` (lease key, journaled admissions,
:class:`~.ownership.OwnershipTelemetry`), :class:`~.polling.Leases`, :class:`~.drain.Drain`,
:class:`~.delivery.CallbackDelivery` and :class:`~.delivery.TrajectorySaver`,
:class:`~.retention.RetainedResults`. Entries are in :mod:`.entry`, 0.3 shims in :mod:`.compat`.
Capped at 480 lines (``tests/rollout/server/test_service_shape.py``): a new concern becomes a
collaborator. Everything runs on the protocol loop without locks: each method is synchronous or
awaits only where the state it relies on is re-checked afterwards.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from osmosis_ai.rollout.backend.base import (
    CANCELLED_QUEUED,
    CANCELLED_RUNNING,
    NOT_FOUND,
    ExecutionBackend,
)
from osmosis_ai.rollout.errors import categorize_exception, describe_exception
from osmosis_ai.rollout.server._impl import ownership, wire
from osmosis_ai.rollout.server._impl.admission import Admission
from osmosis_ai.rollout.server._impl.agent_loop import AgentLoop, executor, shutdown_backend
from osmosis_ai.rollout.server._impl.delivery import CallbackDelivery, TrajectorySaver
from osmosis_ai.rollout.server._impl.drain import Drain
from osmosis_ai.rollout.server._impl.entry import FINISHED, AdmissionError, RolloutEntry, publish
from osmosis_ai.rollout.server._impl.lease import LeaseKey
from osmosis_ai.rollout.server._impl.outbox import (
    Outbox,
    OutboxLocked,
    default_outbox_dir,
    outbox_label,
)
from osmosis_ai.rollout.server._impl.polling import LEASE_EXPIRED_MESSAGE, Leases
from osmosis_ai.rollout.server._impl.retention import (
    UNCHANGED,
    RetainedResults,
    done_line,
    needs_record,
    restore_record,
)
from osmosis_ai.rollout.server._impl.settings import ServerSettings
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest, ExecutionResult
from osmosis_ai.rollout.types.protocol import RolloutInitRequest

__all__ = ["AdmissionError", "RolloutEntry", "RolloutService"]

logger = logging.getLogger("osmosis_ai.rollout.server")

ENV_INSTANCE_ID = "_OSMOSIS_ROLLOUT_INSTANCE_ID"
ENV_OUTBOX_DIR = "OSMOSIS_ROLLOUT_OUTBOX_DIR"
CANCELLED_MESSAGE = "cancelled"
TASK_CRASHED_MESSAGE = "rollout task crashed"

_QUEUED = RolloutStatus.QUEUED


class RolloutService:
    """Owns every rollout the server has admitted and not yet forgotten."""

    def __init__(self, backend: ExecutionBackend, settings: ServerSettings) -> None:
        self.backend = backend
        self.settings = settings
        #: The main thread's loop when the protocol runs in a thread of its own (``serve``).
        self.agent: AgentLoop | None = None
        #: The caller's ``lifespan`` (``create_rollout_server(lifespan=...)``); the app enters
        #: it at start-up unless it runs in the agent process (``_impl.protocol_process``).
        self.caller_lifespan: Any = None
        self._execute = executor(backend, None)
        self.process_id = str(uuid.uuid4())
        self.instance_id = os.environ.get(ENV_INSTANCE_ID) or self.process_id
        self.entries: dict[str, RolloutEntry] = {}
        self.active = 0
        # Admitted rollouts not in backend.execute yet (the capacity check counts them).
        self._unstarted = 0
        self._retained = RetainedResults(
            self.entries,
            retention_sec=settings.result_retention_sec,
            max_results=settings.max_retained_results,
            max_bytes=settings.max_retained_bytes,
            forget=self._acknowledge,
        )
        self._outbox: Outbox | None = None
        #: Names this server's default outbox folder when set (``serve()``: the port).
        self.outbox_instance: str | None = None
        self._restored: set[str] = set()
        self._leases = Leases(
            settings,
            self.entries,
            force_result=self._finalize_forced,
            cancel_execution=self._cancel_execution,
            acknowledge=self._acknowledge,
        )
        self._drain = Drain(
            settings,
            self.entries,
            self._restored,
            cancel_execution=self._cancel_execution,
            force_result=self._finalize_forced,
            leases=self._leases,
        )
        self._admission = Admission(
            settings,
            self.entries,
            process_id=self.process_id,
            lease_key=LeaseKey(os.urandom(32)),  # the outbox's persistent key at start
            drain=self._drain,
            leases=self._leases,
            has_capacity=self._has_capacity,
            run=self._run,
            scheduled=self._scheduled,
        )
        self._trajectories = TrajectorySaver()
        self._callbacks = CallbackDelivery(settings, self._trajectories, self._acknowledge)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def _deliveries(self) -> set[asyncio.Task[None]]:
        """Callback deliveries in flight (tests wait on them)."""
        return self._callbacks.tasks

    @property
    def accepting(self) -> bool:
        """Whether new rollouts are admitted (``False`` once the drain began)."""
        return self._drain.accepting

    # ---- the collaborators' public steps ----------------------------------------------------

    def admit(self, request: RolloutInitRequest, body: bytes | None = None) -> bytes:
        """Register and schedule one rollout; return the 202 body (see :meth:`.Admission.admit`)."""
        return self._admission.admit(request, body)

    def admit_batched(
        self, request: RolloutInitRequest, body: bytes
    ) -> tuple[bytes, Coroutine[Any, Any, None] | None]:
        """:meth:`admit`, journaled with this turn's other records (see
        :meth:`.Admission.admit_batched`)."""
        return self._admission.admit_batched(request, body)

    def lease_ok(self, entry: RolloutEntry, token: str) -> bool:
        return self._leases.matches(entry, token)

    async def poll(self, entry: RolloutEntry) -> bytes:
        """Answer one long poll (token already checked)."""
        return await self._leases.poll(entry)

    def begin_drain(self) -> None:
        """Stop admitting (503) and wake every long poll so pollers see the current status."""
        self._drain.begin()

    def settled(self) -> bool:
        """Nothing is left to run, deliver or fetch (see :meth:`.Drain.settled`)."""
        return self._drain.settled()

    async def drained(self) -> None:
        """Return once :meth:`settled` or the drain grace period is over."""
        await self._drain.drained()

    # ---- lifecycle ------------------------------------------------------------------------

    def use_backend(self, backend: ExecutionBackend) -> None:
        """Swap the backend before the server starts (``serve(app, workers=N)`` puts a
        :class:`~osmosis_ai.rollout.server._impl.workers.pool.WorkerPool` in front of it)."""
        self.backend = backend

    def use_agent_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Run rollouts on ``loop`` (another thread's) before the server starts (see
        :mod:`.agent_loop`); this service and its HTTP stay on the loop that starts it."""
        self.agent = AgentLoop(loop)

    async def start(self) -> None:
        self._execute = executor(self.backend, self.agent)
        self._loop = self._admission.loop = self._leases.loop = self._drain.loop = (
            asyncio.get_running_loop()
        )
        self._admission.ownership = ownership.telemetry_from_env()  # None: OTLP endpoint unset
        start_workers = getattr(self.backend, "start_workers", None)
        if start_workers is not None:
            await start_workers()
        self._trajectories.start(self.settings.save_trajectories)
        self._outbox, records = await asyncio.to_thread(self._open_outbox)
        self._admission.lease_key = LeaseKey(self._outbox.lease_key)
        self._admission.outbox = self._outbox
        self._outbox.bind(self._loop)
        for record in records:
            self._restore(record)
        self._outbox.flush()
        if records:
            logger.info(
                "re-offering %d undelivered rollout result(s) from %s",
                len(records),
                self._outbox.directory,
            )
        self._sweeper = asyncio.create_task(
            self._retained.sweep_forever(), name="osmosis-retention"
        )

    def _open_outbox(self) -> tuple[Outbox, list[dict[str, Any]]]:
        """Open the configured outbox, else the first free per-server default (blocking)."""
        configured = self.settings.outbox_dir or os.environ.get(ENV_OUTBOX_DIR) or None
        label = outbox_label(self.backend)
        if configured is not None:
            outbox = Outbox(Path(configured), backend=label)
            return outbox, outbox.open()
        from osmosis_ai.rollout.home import osmosis_home

        home = osmosis_home()
        root = home.with_name(f"{home.name}.outbox")  # beside the trajectories, not among them
        while True:
            directory = default_outbox_dir(root, label, self.outbox_instance)
            outbox = Outbox(directory, backend=label)
            try:
                return outbox, outbox.open()
            except OutboxLocked:
                if self.outbox_instance:
                    raise  # this instance's own folder: another server of it is running
                continue  # another server took it between the check and the lock

    async def shutdown(self) -> None:
        """Drain, cancel what is left, deliver or persist every result, release resources."""
        if self._closed:
            return
        self._closed = True
        self._drain.begin()
        await self._drain.drain_executions()
        await self._callbacks.flush(self.settings.callback_flush_sec)
        if self._outbox is not None:
            left = sum(1 for e in self.entries.values() if needs_record(e))
            self._outbox.flush()
            await asyncio.to_thread(self._outbox.close)
            if left:
                logger.info(
                    "%d undelivered rollout result(s) stay in %s; they are offered again at "
                    "the next start",
                    left,
                    self._outbox.directory,
                )
        await self._trajectories.drain(10.0)
        if self._admission.ownership is not None:  # the terminal records of the drained ones too
            await asyncio.to_thread(self._admission.ownership.close)
        if self._sweeper is not None:
            self._sweeper.cancel()
        await shutdown_backend(self.backend, self.agent, self.settings.cancel_cleanup_sec)
        await self._callbacks.aclose()

    def _acknowledge(self, entry: RolloutEntry) -> None:
        """The result was received (or forgotten): the outbox no longer needs it."""
        self._drain.settling.set()
        if entry.journaled and self._outbox is not None:
            entry.journaled = False
            self._outbox.put(entry.rollout_id, None)

    # ---- execution ------------------------------------------------------------------------

    def _has_capacity(self) -> bool:
        backend = self.backend
        fits = getattr(backend, "has_capacity_for", None)  # absent on duck-typed backends
        pending = self._unstarted + (self.agent.pending if self.agent is not None else 0)
        return fits(pending) if fits is not None else backend.has_capacity()

    def _scheduled(self, entry: RolloutEntry, task: asyncio.Task[None]) -> None:
        """Admission scheduled ``task`` to run ``entry``: count it, and finish it when it ends."""
        entry.task = task
        self.active += 1
        self._unstarted += 1
        task.add_done_callback(lambda t, e=entry: self._task_done(e, t))

    async def _run(self, entry: RolloutEntry, exec_request: ExecutionRequest) -> None:
        entry.started = True
        self._unstarted -= 1
        outcome: ExecutionOutcome | None = None
        try:
            outcome = await self._execute(exec_request, entry.progress)
        except asyncio.CancelledError:
            self._finalize_forced(
                entry, RolloutStatus.CANCELLED, entry.cancel_message or CANCELLED_MESSAGE, None
            )
            return
        except Exception as exc:
            logger.warning(
                "backend.execute raised for rollout %s: %s",
                entry.rollout_id,
                describe_exception(exc),
            )
            self._finalize_forced(
                entry,
                RolloutStatus.FAILURE,
                describe_exception(exc) or "Internal server error",
                categorize_exception(exc),
            )
            return
        if entry.cancel_requested:
            # Cancelled, but the rollout code swallowed the cancellation and returned.
            self._finalize_forced(
                entry, RolloutStatus.CANCELLED, entry.cancel_message or CANCELLED_MESSAGE, None
            )
            return
        if not isinstance(outcome, ExecutionOutcome):
            self._finalize_forced(
                entry,
                RolloutStatus.FAILURE,
                f"backend.execute returned {type(outcome).__name__}, expected ExecutionOutcome",
                RolloutErrorCategory.INTERNAL_ERROR,
            )
            return
        self._finalize(entry, outcome)
        await self._trajectories.room()  # backpressure: the result is out, the slot waits

    def _task_done(self, entry: RolloutEntry, task: asyncio.Task[None]) -> None:
        self.active -= 1
        if not entry.started:
            self._unstarted -= 1  # cancelled before it ever ran
        entry.task = None
        if entry.finished:
            return
        if task.cancelled():
            # Cancelled before it ever ran: the task body never saw the cancellation.
            message = entry.cancel_message or (CANCELLED_MESSAGE if entry.started else None)
            self._finalize_forced(entry, RolloutStatus.CANCELLED, message, None)
            return
        exc = task.exception()
        logger.error("rollout task %s crashed", entry.rollout_id, exc_info=exc)
        self._finalize_forced(
            entry, RolloutStatus.FAILURE, TASK_CRASHED_MESSAGE, RolloutErrorCategory.INTERNAL_ERROR
        )

    def _finalize_forced(
        self,
        entry: RolloutEntry,
        status: RolloutStatus,
        message: str | None,
        category: RolloutErrorCategory | None,
    ) -> None:
        result = ExecutionResult(status=status, err_message=message, err_category=category)
        self._finalize(entry, ExecutionOutcome(workflow=result), forced=True)

    def _finalize(
        self, entry: RolloutEntry, outcome: ExecutionOutcome, *, forced: bool = False
    ) -> None:
        """Record the terminal result (the first one wins) and start delivering it."""
        if entry.finished:
            return
        loop = self._loop or asyncio.get_running_loop()
        result = outcome.result
        if (
            entry.uses_lease
            and not forced
            and entry.lease_deadline
            and loop.time() >= entry.lease_deadline
        ):
            # Finished after the lease ran out: the controller has given up on this rollout.
            result = ExecutionResult(
                status=RolloutStatus.FAILURE,
                err_message=LEASE_EXPIRED_MESSAGE,
                err_category=RolloutErrorCategory.LEASE_EXPIRED,
            )
        status = RolloutStatus(result.status)
        entry.result = wire.result_json(entry.rollout_id, result)
        entry.status = status
        entry.err_message = result.err_message
        entry.reward = result.wire_reward
        entry.finished = True
        entry.finished_at = loop.time()
        request = entry.request
        callbacks = False
        if request is not None and request.completion_callback_url is not None:
            callbacks = True
            self._journal_result(entry)  # on file before the first callback is sent
            self._callbacks.schedule(entry, request, outcome, forced)
        elif request is not None:
            self._trajectories.spawn_save(entry.rollout_id, request, outcome)
            entry.request = None
        if entry.timer is not None:
            entry.timer.cancel()  # lets the loop drop it (and this entry) from its timer heap
            entry.timer = None
        progress = entry.progress
        entry.progress = FINISHED  # waiters hold the old event; a retained result stays small
        publish(progress, status)
        if not callbacks:
            # After waking the long polls: one that takes the result in this turn turns the
            # pending record into an acknowledgement (the result's line is never built).
            self._journal_result(entry)
        self._retained.add(entry, loop.time())
        self._drain.settling.set()

    def _journal_result(self, entry: RolloutEntry) -> None:
        """Record ``entry``'s finished result for this turn's journal write (at most once)."""
        if entry.journaled and self._outbox is not None:
            self._outbox.put(entry.rollout_id, lambda: done_line(entry))

    # ---- cancellation ---------------------------------------------------------------------

    def select(self, ids: list[str] | None, prefix: str | None, all_: bool) -> list[str]:
        if ids is not None:
            return list(dict.fromkeys(ids))
        if prefix is not None:
            return [rid for rid in self.entries if rid.startswith(prefix)]
        return list(self.entries)

    def cancel(self, rollout_ids: list[str]) -> dict[str, str]:
        dispositions: dict[str, str] = {}
        for rollout_id in rollout_ids:
            entry = self.entries.get(rollout_id)
            if entry is None or entry.finished:
                dispositions[rollout_id] = NOT_FOUND
                continue
            if entry.cancel_disposition is None:
                entry.cancel_disposition = self._cancel_execution(entry)
            dispositions[rollout_id] = entry.cancel_disposition
        return dispositions

    def _cancel_execution(self, entry: RolloutEntry) -> str:
        """Cancel the execution task this server owns; the disposition comes from the one
        status there is, the progress object."""
        queued = entry.progress.status == _QUEUED
        entry.cancel_requested = True
        if entry.task is not None and not entry.task.done():
            entry.task.cancel()
        return CANCELLED_QUEUED if queued else CANCELLED_RUNNING

    # ---- outbox --------------------------------------------------------------------------

    def _restore(self, record: dict[str, Any]) -> None:
        now = (self._loop or asyncio.get_running_loop()).time()
        entry, line = restore_record(record, now)
        if line is not UNCHANGED and self._outbox is not None:
            self._outbox.put(str(record["id"]), line)
        if entry is None:
            return
        self._restored.add(entry.rollout_id)
        self.entries[entry.rollout_id] = entry
        self._retained.add(entry, entry.finished_at)
        if entry.callbacks:
            self._callbacks.spawn(entry, None)

    # ---- introspection --------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        payload = dict(self.backend.health())
        payload["instance_id"] = self.instance_id
        payload["process_id"] = self.process_id
        payload["lifecycle"] = {
            "accepting_rollouts": self.accepting,
            "active_rollouts": self.active,
        }
        outbox = self._outbox
        if outbox is not None and outbox.failed:  # results are not crash-safe right now
            payload["status"] = "degraded"
            payload["journal"] = {"status": "degraded", "error": outbox.error}
        elif outbox is not None:
            payload["journal"] = {"status": "ok"}
        return payload

    def status_of(self, rollout_id: str) -> dict[str, Any]:
        entry = self.entries.get(rollout_id)
        if entry is not None:
            return {
                "rollout_id": rollout_id,
                "status": entry.current_status.value,
                "reward": entry.reward if entry.finished else None,
                "err_message": wire.clean_text(entry.err_message) if entry.finished else None,
            }
        return {"rollout_id": rollout_id, "status": "unknown", "reward": None, "err_message": None}
