"""The rollout service: one registry and one execution path for both wire protocols.

The HTTP layer (:mod:`.app`) only parses and answers; the service owns each rollout's
lifecycle: admission, the execution task (``backend.execute(request, progress)``), the one
status (the entry's progress), leases and their expiry, long polls, cancellation (cancelling
its own task), graceful drain and the outbox. Delivery (trajectories, 0.3.0 callbacks) is in
:mod:`.delivery`, retention and outbox records in :mod:`.retention`, entries in :mod:`.entry`.

Everything runs on the event loop without locks: each method is either synchronous or awaits
only at points where the state it relies on is re-checked afterwards.
"""

from __future__ import annotations

import asyncio
import hashlib
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
    accepts_progress,
    execute_legacy,
)
from osmosis_ai.rollout.errors import categorize_exception, describe_exception
from osmosis_ai.rollout.server import wire
from osmosis_ai.rollout.server.delivery import CallbackDelivery, TrajectorySaver
from osmosis_ai.rollout.server.drain import DrainingMixin
from osmosis_ai.rollout.server.entry import FINISHED, AdmissionError, RolloutEntry, publish
from osmosis_ai.rollout.server.lease import LeaseKey, lease_matches
from osmosis_ai.rollout.server.outbox import Outbox, OutboxLocked, default_outbox_dir
from osmosis_ai.rollout.server.retention import (
    RetainedResults,
    admission_line,
    done_line,
    entry_from_record,
    needs_record,
    restarted_entry,
)
from osmosis_ai.rollout.server.settings import ServerSettings
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest, ExecutionResult
from osmosis_ai.rollout.types.protocol import RolloutInitRequest

__all__ = ["AdmissionError", "RolloutEntry", "RolloutService"]

logger = logging.getLogger("osmosis_ai.rollout.server")

ENV_INSTANCE_ID = "_OSMOSIS_ROLLOUT_INSTANCE_ID"
ENV_OUTBOX_DIR = "OSMOSIS_ROLLOUT_OUTBOX_DIR"
LEASE_EXPIRED_MESSAGE = "polling lease expired"
CANCELLED_MESSAGE = "cancelled"
TASK_CRASHED_MESSAGE = "rollout task crashed"
_FIRST_POLL_WAIT_SEC = 0.25

_RUNNING = RolloutStatus.RUNNING
_QUEUED = RolloutStatus.QUEUED


class RolloutService(DrainingMixin):
    """Owns every rollout the server has admitted and not yet forgotten."""

    def __init__(self, backend: ExecutionBackend, settings: ServerSettings) -> None:
        self.backend = backend
        self.settings = settings
        # 0.3.8 backends implement execute(request) and read the ambient context.
        self._legacy_backend = not accepts_progress(backend)
        self.process_id = str(uuid.uuid4())
        self.instance_id = os.environ.get(ENV_INSTANCE_ID) or self.process_id
        self.entries: dict[str, RolloutEntry] = {}
        self.accepting = True
        self.active = 0
        # Admitted rollouts whose task has not started yet (not in backend.execute: the
        # backend cannot count them, the capacity check does).
        self._unstarted = 0
        self._retained = RetainedResults(
            self.entries,
            retention_sec=settings.result_retention_sec,
            max_results=settings.max_retained_results,
            max_bytes=settings.max_retained_bytes,
            forget=self._acknowledge,
        )
        self._outbox: Outbox | None = None
        self._lease_key = LeaseKey(os.urandom(32))  # the outbox's persistent key at start
        self._restored: set[str] = set()
        self._drain_deadline: float | None = None
        self._settling = asyncio.Event()  # set whenever a result finishes or is received
        self._trajectories = TrajectorySaver()
        self._callbacks = CallbackDelivery(settings, self._trajectories, self._acknowledge)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def _deliveries(self) -> set[asyncio.Task[None]]:
        """Callback deliveries in flight (tests wait on them)."""
        return self._callbacks.tasks

    # ---- lifecycle ------------------------------------------------------------------------

    def use_backend(self, backend: ExecutionBackend) -> None:
        """Swap the backend before the server starts (``serve(app, workers=N)`` puts a
        :class:`~osmosis_ai.rollout.server._workers.pool.WorkerPool` in front of it)."""
        self.backend = backend
        self._legacy_backend = not accepts_progress(backend)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        start_workers = getattr(self.backend, "start_workers", None)
        if start_workers is not None:
            await start_workers()
        self._trajectories.start(self.settings.save_trajectories)
        self._outbox, records = await asyncio.to_thread(self._open_outbox)
        self._lease_key = LeaseKey(self._outbox.lease_key)
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
        if configured is not None:
            outbox = Outbox(Path(configured))
            return outbox, outbox.open()
        from osmosis_ai.rollout.home import osmosis_home

        home = osmosis_home()
        root = home.with_name(f"{home.name}.outbox")  # beside the trajectories, not among them
        while True:
            outbox = Outbox(default_outbox_dir(root, type(self.backend).__name__))
            try:
                return outbox, outbox.open()
            except OutboxLocked:
                continue  # another server took it between the check and the lock

    async def shutdown(self) -> None:
        """Drain, cancel what is left, deliver or persist every result, release resources."""
        if self._closed:
            return
        self._closed = True
        self.begin_drain()
        await self._drain_executions()
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
        if self._sweeper is not None:
            self._sweeper.cancel()
        try:
            await self.backend.shutdown()
        except Exception:
            logger.exception("backend.shutdown() raised")
        await self._callbacks.aclose()

    # ---- admission ------------------------------------------------------------------------

    def admit(self, request: RolloutInitRequest, body: bytes | None = None) -> bytes:
        """Register and schedule one rollout; return the 202 body. Never awaits agent work.

        The same ``rollout_id`` with the same request body again (a controller retrying an
        admission whose response it lost) gets the same admission back: the same lease token,
        and the lease renewed. A different body gets 409."""
        raw = body if body is not None else request.model_dump_json().encode()
        return self._admit(request, hashlib.sha256(raw).digest())[1]

    def admit_batched(
        self, request: RolloutInitRequest, body: bytes
    ) -> tuple[bytes, Coroutine[Any, Any, None] | None]:
        """:meth:`admit`, the admission journaled with everything else recorded in this
        event-loop turn (one ``write`` for all of them): send the 202 body only once the
        returned coroutine (if any) has been awaited, so a crash after the 202 still finds the admission."""
        payload = self._admit(request, hashlib.sha256(body).digest(), journal_now=False)[1]
        return payload, self._outbox.written() if self._outbox is not None else None

    def _admit(
        self, request: RolloutInitRequest, fingerprint: bytes, *, journal_now: bool = True
    ) -> tuple[RolloutEntry, bytes]:
        rollout_id = request.rollout_id or uuid.uuid4().hex
        existing = self.entries.get(rollout_id)
        if existing is not None and existing.fingerprint == fingerprint and existing.uses_lease:
            return existing, self._readmit(existing)
        if not self.accepting:
            raise AdmissionError(503, "rollout server is shutting down")
        if not self._has_capacity():
            raise AdmissionError(429, "rollout queue is full; retry later")
        if existing is not None:
            # 0.3.8's exact body; the same request again would have been re-admitted above.
            raise AdmissionError(409, "rollout_id is already registered")
        salt = self._lease_key.new_salt()
        token, digest = self._lease_key.derive(salt)
        entry = RolloutEntry(rollout_id, digest)
        entry.salt = salt
        entry.fingerprint = fingerprint
        entry.request = request
        settings = self.settings
        loop = self._loop or asyncio.get_running_loop()
        callbacks = request.completion_callback_url is not None
        task: asyncio.Task[None] | None = None
        api_key = request.llm_api_key
        if api_key is None and callbacks:
            api_key = request.controller_api_key  # the 0.3.0 fallback
        try:
            exec_request = ExecutionRequest(
                id=rollout_id,
                prompt=request.initial_messages,
                label=request.label,
                metadata=request.metadata,
                agent_timeout_sec=request.agent_timeout_sec,
                grader_timeout_sec=request.grader_timeout_sec,
                grade=request.grade and (not callbacks or request.grader_callback_url is not None),
                chat_completions_url=request.chat_completions_url,
                api_key=api_key,
                process_id=self.process_id,
            )
            if callbacks:
                entry.uses_lease = False
                entry.callback_key = request.controller_api_key or None
            else:
                entry.lease_deadline = loop.time() + settings.polling_lease_timeout_sec
                entry.timer = loop.call_at(entry.lease_deadline, self._check_lease, entry)
            self.entries[rollout_id] = entry
            # The task first: its first step then runs before this turn's journal write (when
            # that is not scheduled yet), so a rollout that finishes in that step (a no-op) is
            # written once, as its result, and never as an admission.
            task = loop.create_task(self._run(entry, exec_request))
            self._journal_admission(entry, request, journal_now)
        except Exception as exc:
            if task is not None:
                task.cancel()
            self.entries.pop(rollout_id, None)
            logger.exception("could not schedule rollout %s", rollout_id)
            raise AdmissionError(500, "could not schedule the rollout; see the server log") from exc
        entry.task = task
        self.active += 1
        self._unstarted += 1
        task.add_done_callback(lambda t, e=entry: self._task_done(e, t))
        return entry, self._admission_body(rollout_id, token)

    def _admission_body(self, rollout_id: str, token: str) -> bytes:
        settings = self.settings
        return (
            f'{{"rollout_id":{wire.encode_json(rollout_id).decode()},"status":"queued",'
            f'"polling_lease_token":"{token}",'
            f'"result_wait_timeout_sec":{settings.result_wait_timeout_sec!r},'
            f'"polling_lease_timeout_sec":{settings.polling_lease_timeout_sec!r}}}'
        ).encode()

    def _readmit(self, entry: RolloutEntry) -> bytes:
        """The admission of ``entry`` again (same token), its lease renewed."""
        token, digest = self._lease_key.derive(entry.salt)
        if digest != entry.lease_digest:  # admitted under another key: cannot be re-derived
            raise AdmissionError(409, "rollout_id is already registered")
        if not entry.finished:
            loop = self._loop or asyncio.get_running_loop()
            entry.lease_deadline = loop.time() + self.settings.polling_lease_timeout_sec
        return self._admission_body(entry.rollout_id, token)

    def _journal_admission(
        self, entry: RolloutEntry, request: RolloutInitRequest, now: bool
    ) -> None:
        outbox = self._outbox
        if outbox is None:
            return
        urls = [u for u in (request.completion_callback_url, request.grader_callback_url) if u]
        entry.journaled = True
        if now:
            outbox.write_now(entry.rollout_id, admission_line(entry, urls))
        else:
            # Built when this turn's records are written: a rollout that finishes in its first
            # step (before that write) replaces it with its result, and the line is never built.
            outbox.put(entry.rollout_id, lambda: admission_line(entry, urls))

    def _acknowledge(self, entry: RolloutEntry) -> None:
        """The result was received (or forgotten): the outbox no longer needs it."""
        self._settling.set()
        if entry.journaled and self._outbox is not None:
            entry.journaled = False
            self._outbox.put(entry.rollout_id, None)

    # ---- execution ------------------------------------------------------------------------

    def _has_capacity(self) -> bool:
        backend = self.backend
        fits = getattr(backend, "has_capacity_for", None)  # absent on duck-typed backends
        return fits(self._unstarted) if fits is not None else backend.has_capacity()

    async def _run(self, entry: RolloutEntry, exec_request: ExecutionRequest) -> None:
        entry.started = True
        self._unstarted -= 1
        outcome: ExecutionOutcome | None = None
        try:
            if self._legacy_backend:
                outcome = await self._run_legacy(entry, exec_request)
            else:
                outcome = await self.backend.execute(exec_request, entry.progress)
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

    async def _run_legacy(
        self, entry: RolloutEntry, exec_request: ExecutionRequest
    ) -> ExecutionOutcome:
        """A 0.3.8 backend: the server enters the context and reports ``running`` at once."""
        return await execute_legacy(self.backend, exec_request, entry.progress)

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
        self._settling.set()

    def _journal_result(self, entry: RolloutEntry) -> None:
        """Record ``entry``'s finished result for this turn's journal write (at most once)."""
        if entry.journaled and self._outbox is not None:
            self._outbox.put(entry.rollout_id, lambda: done_line(entry))

    # ---- leases and polls -----------------------------------------------------------------

    def _check_lease(self, entry: RolloutEntry) -> None:
        if entry.finished or self.entries.get(entry.rollout_id) is not entry:
            return
        loop = self._loop or asyncio.get_running_loop()
        if loop.time() < entry.lease_deadline:
            entry.timer = loop.call_at(entry.lease_deadline, self._check_lease, entry)
            return
        entry.timer = None
        self._expire(entry)

    def _expire(self, entry: RolloutEntry) -> None:
        logger.warning(
            "polling lease of rollout %s expired (no poll for %.0fs); cancelling it",
            entry.rollout_id,
            self.settings.polling_lease_timeout_sec,
        )
        self._finalize_forced(
            entry, RolloutStatus.FAILURE, LEASE_EXPIRED_MESSAGE, RolloutErrorCategory.LEASE_EXPIRED
        )
        self._cancel_execution(entry)

    def lease_ok(self, entry: RolloutEntry, token: str) -> bool:
        return lease_matches(token, entry.lease_digest)

    def _fetched(self, entry: RolloutEntry) -> bytes:
        if not entry.fetched:
            entry.fetched = True
            self._acknowledge(entry)
        return entry.result

    async def poll(self, entry: RolloutEntry) -> bytes:
        """Answer one long poll (token already checked)."""
        if entry.finished:
            return self._fetched(entry)
        loop = self._loop or asyncio.get_running_loop()
        if entry.uses_lease:
            now = loop.time()
            if now >= entry.lease_deadline:
                self._expire(entry)
                return self._fetched(entry)
            entry.lease_deadline = now + self.settings.polling_lease_timeout_sec
        wait = self.settings.result_wait_timeout_sec
        if not entry.polled:
            entry.polled = True
            if entry.progress.status != _QUEUED:
                # The controller has only seen "queued" (from admission). Wait briefly for the
                # next change (a fast rollout then needs a single poll), but report the unseen
                # progress soon rather than after a full wait.
                wait = min(wait, _FIRST_POLL_WAIT_SEC)
        event = entry.progress.changed
        try:
            async with asyncio.timeout(wait):
                await event.wait()
        except TimeoutError:
            pass
        if entry.finished:
            return self._fetched(entry)
        return wire.in_progress_json(entry.rollout_id, entry.progress.status)

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
        if record.get("op") == "admit":
            # Admitted, never finished: the server stopped without a trace of it (kill -9).
            entry = restarted_entry(record, now)
            if entry is not None and self._outbox is not None:
                self._outbox.put(entry.rollout_id, done_line(entry))
        else:
            entry = entry_from_record(record, now)
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
