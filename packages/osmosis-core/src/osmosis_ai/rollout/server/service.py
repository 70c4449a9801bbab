"""The rollout service: one registry and one execution path for both wire protocols.

The HTTP layer (:mod:`.app`) only parses and answers; everything with state lives here:
admission, the execution task of each rollout (run inside a fresh :class:`RolloutContext`),
leases and their expiry, long polls, cancellation, retention (by age and by count), callback
delivery, trajectory saving, graceful drain and the outbox.

Everything runs on the event loop without locks: each method is either synchronous or awaits
only at points where the state it relies on is re-checked afterwards.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from osmosis_ai.rollout.backend.base import (
    CANCELLED_QUEUED,
    CANCELLED_RUNNING,
    NOT_FOUND,
    ExecutionBackend,
)
from osmosis_ai.rollout.context import RolloutContext, RolloutProgress
from osmosis_ai.rollout.errors import categorize_exception, describe_exception
from osmosis_ai.rollout.server import wire
from osmosis_ai.rollout.server.callbacks import CallbackSender, DeliveryState, RetryPolicy
from osmosis_ai.rollout.server.lease import lease_matches, mint_lease_token
from osmosis_ai.rollout.server.outbox import Outbox
from osmosis_ai.rollout.server.settings import ServerSettings
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest, ExecutionResult
from osmosis_ai.rollout.types.protocol import RolloutInitRequest

logger = logging.getLogger("osmosis_ai.rollout.server")

ENV_INSTANCE_ID = "_OSMOSIS_ROLLOUT_INSTANCE_ID"
LEASE_EXPIRED_MESSAGE = "polling lease expired"
CANCELLED_MESSAGE = "cancelled"
TASK_CRASHED_MESSAGE = "rollout task crashed"
# Saves in flight at once: the writer batches queued saves into one thread hand-off, so a
# narrow limit here would defeat the batching and let a backlog (holding samples) build up.
_TRAJECTORY_CONCURRENCY = 256
_FIRST_POLL_WAIT_SEC = 0.25

_RUNNING = RolloutStatus.RUNNING
_QUEUED = RolloutStatus.QUEUED
_USABLE_DISPOSITIONS = frozenset({CANCELLED_QUEUED, CANCELLED_RUNNING})


class AdmissionError(Exception):
    """Admission refused with an HTTP status (503, 429, 409, 500)."""

    def __init__(self, status_code: int, detail: str) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.detail = detail


class RolloutEntry:
    """One registered rollout. After it finishes, only the encoded result and the lease digest
    are kept (the request, sample and task are dropped), so retained results stay small."""

    __slots__ = (
        "callback_key",
        "callbacks",
        "cancel_disposition",
        "cancel_message",
        "err_message",
        "fetched",
        "finished",
        "finished_at",
        "lease_deadline",
        "lease_digest",
        "polled",
        "progress",
        "request",
        "result",
        "reward",
        "rollout_id",
        "started",
        "status",
        "task",
        "timer",
        "uses_lease",
    )

    def __init__(self, rollout_id: str, lease_digest: bytes) -> None:
        self.rollout_id = rollout_id
        self.lease_digest = lease_digest
        self.lease_deadline = 0.0
        self.uses_lease = True
        self.request: RolloutInitRequest | None = None
        self.progress = RolloutProgress()
        self.task: asyncio.Task[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.started = False
        self.finished = False
        self.finished_at = 0.0
        self.result: bytes = b""
        self.status = _QUEUED
        self.reward: float | None = None
        self.err_message: str | None = None
        self.fetched = False
        self.polled = False
        self.cancel_disposition: str | None = None
        self.cancel_message: str | None = None
        # 0.3.0 mode: callbacks still to deliver, in order: (phase, url, body).
        self.callbacks: list[tuple[str, str, bytes]] | None = None
        self.callback_key: str | None = None

    @property
    def current_status(self) -> RolloutStatus:
        return self.status if self.finished else self.progress.status


# Shared by every finished entry in place of its own progress object (memory per retained
# result); finished entries answer from ``entry.status``, never from this.
_FINISHED = RolloutProgress(status=RolloutStatus.SUCCESS)


def _publish(progress: RolloutProgress, status: RolloutStatus) -> None:
    """Synchronous twin of ``RolloutProgress.set_status`` for server-owned transitions (the
    server never installs ``on_status``, so nothing needs awaiting)."""
    if status == progress.status or progress.status.is_terminal:
        return
    progress.status = status
    _wake(progress)


def _wake(progress: RolloutProgress) -> None:
    event, progress.changed = progress.changed, asyncio.Event()
    event.set()


class RolloutService:
    """Owns every rollout the server has admitted and not yet forgotten."""

    def __init__(self, backend: ExecutionBackend, settings: ServerSettings) -> None:
        self.backend = backend
        self.settings = settings
        self.process_id = str(uuid.uuid4())
        self.instance_id = os.environ.get(ENV_INSTANCE_ID) or self.process_id
        self.entries: dict[str, RolloutEntry] = {}
        self.accepting = True
        self.active = 0
        self._finished_order: collections.deque[RolloutEntry] = collections.deque()
        self._deliveries: set[asyncio.Task[None]] = set()
        self._background: set[asyncio.Task[Any]] = set()
        self._sender = CallbackSender(
            RetryPolicy(
                budget_sec=settings.callback_retry_budget_sec,
                initial_delay_sec=settings.callback_backoff_initial_sec,
                max_delay_sec=settings.callback_backoff_max_sec,
                request_timeout_sec=settings.callback_timeout_sec,
            )
        )
        self._outbox: Outbox | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._trajectory_slots: asyncio.Semaphore | None = None
        self._save_trajectory: Callable[..., Coroutine[Any, Any, Any]] | None = None
        self._report_type: Any = None
        self._closed = False

    # ---- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._trajectory_slots = asyncio.Semaphore(_TRAJECTORY_CONCURRENCY)
        if self.settings.save_trajectories:
            self._load_trajectory_writer()
        self._outbox = Outbox(self._outbox_dir())
        records = await asyncio.to_thread(self._outbox.take)
        for record in records:
            self._restore(record)
        if records:
            logger.info(
                "re-offering %d undelivered rollout result(s) from %s",
                len(records),
                self._outbox.directory,
            )
        self._sweeper = asyncio.create_task(self._sweep_forever(), name="osmosis-retention")

    def _outbox_dir(self) -> Path:
        if self.settings.outbox_dir is not None:
            return Path(self.settings.outbox_dir)
        from osmosis_ai.rollout.home import osmosis_home

        return osmosis_home() / "outbox"

    def _load_trajectory_writer(self) -> None:
        try:
            from osmosis_ai.rollout import trajectory
        except ImportError as exc:  # the writer ships with core; guard against partial installs
            logger.warning("trajectory saving is disabled: %s", exc)
            return
        self._save_trajectory = getattr(trajectory, "save_trajectory", None)
        self._report_type = getattr(trajectory, "TrajectoryReport", None)

    def begin_drain(self) -> None:
        """Stop admitting (503) and wake every long poll so pollers see the current status."""
        if not self.accepting:
            return
        self.accepting = False
        logger.info("rollout server is draining: new rollouts are refused with 503")
        for entry in self.entries.values():
            if not entry.finished:
                _wake(entry.progress)

    async def shutdown(self) -> None:
        """Drain, cancel what is left, deliver or persist every result, release resources."""
        if self._closed:
            return
        self._closed = True
        self.begin_drain()
        grace = self.settings.drain_grace_sec
        running = self._running_tasks()
        if running:
            logger.info(
                "waiting up to %gs for %d in-flight rollout(s) to finish", grace, len(running)
            )
            await asyncio.wait(running, timeout=grace)
        running = self._running_tasks()
        if running:
            message = (
                f"cancelled: the rollout server shut down before the rollout finished "
                f"(drain grace period of {grace:g}s elapsed)"
            )
            logger.warning(
                "cancelling %d rollout(s) still running after the grace period", len(running)
            )
            for entry in list(self.entries.values()):
                if not entry.finished and entry.task is not None and not entry.task.done():
                    entry.cancel_message = message
                    self._cancel_execution(entry)
            await asyncio.wait(running, timeout=self.settings.cancel_cleanup_sec)
            for entry in list(self.entries.values()):
                if not entry.finished:
                    logger.error(
                        "rollout %s did not stop within %.0fs of being cancelled; reporting it "
                        "as cancelled",
                        entry.rollout_id,
                        self.settings.cancel_cleanup_sec,
                    )
                    self._finalize_forced(entry, RolloutStatus.CANCELLED, message, None)
                    if entry.task is not None:
                        entry.task.cancel()
        if self._deliveries:
            await asyncio.wait(set(self._deliveries), timeout=self.settings.callback_flush_sec)
            for task in list(self._deliveries):
                task.cancel()
            await asyncio.gather(*self._deliveries, return_exceptions=True)
        records = [r for e in self.entries.values() if (r := self._outbox_record(e)) is not None]
        if records and self._outbox is not None:
            written = await asyncio.to_thread(self._outbox.write, records)
            logger.info(
                "wrote %d undelivered rollout result(s) to %s; they are offered again at the "
                "next start",
                written,
                self._outbox.directory,
            )
        if self._background:
            await asyncio.wait(set(self._background), timeout=10.0)
        if self._sweeper is not None:
            self._sweeper.cancel()
        try:
            await self.backend.shutdown()
        except Exception:
            logger.exception("backend.shutdown() raised")
        await self._sender.aclose()

    def _running_tasks(self) -> set[asyncio.Task[None]]:
        return {e.task for e in self.entries.values() if e.task is not None and not e.task.done()}

    # ---- admission ------------------------------------------------------------------------

    def admit(self, request: RolloutInitRequest) -> bytes:
        """Register and schedule one rollout; return the 202 body. Never awaits agent work."""
        if not self.accepting:
            raise AdmissionError(503, "rollout server is shutting down")
        if not self.backend.has_capacity():
            raise AdmissionError(429, "rollout queue is full; retry later")
        rollout_id = request.rollout_id or uuid.uuid4().hex
        if rollout_id in self.entries:
            raise AdmissionError(409, "rollout_id is already registered")
        token, digest = mint_lease_token()
        entry = RolloutEntry(rollout_id, digest)
        entry.request = request
        settings = self.settings
        loop = self._loop or asyncio.get_running_loop()
        callbacks = request.completion_callback_url is not None
        try:
            exec_request = ExecutionRequest(
                id=rollout_id,
                prompt=request.initial_messages,
                label=request.label,
                metadata=request.metadata,
                agent_timeout_sec=request.agent_timeout_sec,
                grader_timeout_sec=request.grader_timeout_sec,
                grade=request.grade and (not callbacks or request.grader_callback_url is not None),
            )
            if callbacks:
                entry.uses_lease = False
                entry.callback_key = request.controller_api_key or None
            else:
                entry.lease_deadline = loop.time() + settings.polling_lease_timeout_sec
                entry.timer = loop.call_at(entry.lease_deadline, self._check_lease, entry)
            self.entries[rollout_id] = entry
            task = loop.create_task(self._run(entry, exec_request))
        except Exception as exc:
            self.entries.pop(rollout_id, None)
            logger.exception("could not schedule rollout %s", rollout_id)
            raise AdmissionError(500, "could not schedule the rollout; see the server log") from exc
        entry.task = task
        self.active += 1
        task.add_done_callback(lambda t, e=entry: self._task_done(e, t))
        return (
            f'{{"rollout_id":{wire.encode_json(rollout_id).decode()},"status":"queued",'
            f'"polling_lease_token":"{token}",'
            f'"result_wait_timeout_sec":{settings.result_wait_timeout_sec!r},'
            f'"polling_lease_timeout_sec":{settings.polling_lease_timeout_sec!r}}}'
        ).encode()

    # ---- execution ------------------------------------------------------------------------

    async def _run(self, entry: RolloutEntry, exec_request: ExecutionRequest) -> None:
        entry.started = True
        _publish(entry.progress, _RUNNING)
        request = entry.request
        assert request is not None
        api_key = request.llm_api_key
        if api_key is None and request.completion_callback_url is not None:
            api_key = request.controller_api_key  # the 0.3.0 fallback
        outcome: ExecutionOutcome | None = None
        try:
            with RolloutContext(
                chat_completions_url=request.chat_completions_url,
                api_key=api_key,
                rollout_id=entry.rollout_id,
                progress=entry.progress,
            ):
                outcome = await self.backend.execute(exec_request)
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
        if not isinstance(outcome, ExecutionOutcome):
            self._finalize_forced(
                entry,
                RolloutStatus.FAILURE,
                f"backend.execute returned {type(outcome).__name__}, expected ExecutionOutcome",
                RolloutErrorCategory.INTERNAL_ERROR,
            )
            return
        self._finalize(entry, outcome)

    def _task_done(self, entry: RolloutEntry, task: asyncio.Task[None]) -> None:
        self.active -= 1
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
        if request is not None and request.completion_callback_url is not None:
            completion = wire.completion_json(entry.rollout_id, outcome.workflow)
            pending = [("completion", request.completion_callback_url, completion)]
            if request.grader_callback_url is not None:
                grader = outcome.grader
                if forced or outcome.workflow.status != RolloutStatus.SUCCESS:
                    grader = None
                pending.append(
                    (
                        "grader",
                        request.grader_callback_url,
                        wire.grader_json(entry.rollout_id, grader),
                    )
                )
            entry.callbacks = pending
            self._spawn_delivery(entry, outcome)
        elif request is not None:
            self._spawn(self._save(entry.rollout_id, request, outcome, None))
            entry.request = None
        self._finished_order.append(entry)
        if entry.timer is not None:
            entry.timer.cancel()  # lets the loop drop it (and this entry) from its timer heap
            entry.timer = None
        progress = entry.progress
        entry.progress = _FINISHED  # waiters hold the old event; a retained result stays small
        _publish(progress, status)
        if len(self._finished_order) > self.settings.max_retained_results:
            self._evict(loop.time())

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

    async def poll(self, entry: RolloutEntry) -> bytes:
        """Answer one long poll (token already checked)."""
        if entry.finished:
            entry.fetched = True
            return entry.result
        loop = self._loop or asyncio.get_running_loop()
        if entry.uses_lease:
            now = loop.time()
            if now >= entry.lease_deadline:
                self._expire(entry)
                entry.fetched = True
                return entry.result
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
            entry.fetched = True
            return entry.result
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
        """Ask the backend to cancel; fall back to cancelling the server's own task."""
        rollout_id = entry.rollout_id
        disposition: Any = None
        try:
            disposition = self.backend.cancel_rollouts(ids=[rollout_id]).get(rollout_id)
        except Exception:
            logger.exception("backend.cancel_rollouts raised for rollout %s", rollout_id)
        if disposition in _USABLE_DISPOSITIONS:
            return disposition
        if disposition == NOT_FOUND:
            try:
                known = self.backend.rollout_status(rollout_id)
            except Exception:
                known = None
            status = known.get("status") if isinstance(known, dict) else None
            if status in {"success", "failure", "cancelled"}:
                return NOT_FOUND
        queued = not entry.started or entry.progress.status == _QUEUED
        if entry.task is not None and not entry.task.done():
            entry.task.cancel()
        return CANCELLED_QUEUED if queued else CANCELLED_RUNNING

    # ---- delivery: callbacks and trajectories ---------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _spawn_delivery(self, entry: RolloutEntry, outcome: ExecutionOutcome | None) -> None:
        task = asyncio.get_running_loop().create_task(self._deliver(entry, outcome))
        self._deliveries.add(task)
        task.add_done_callback(self._deliveries.discard)

    async def _deliver(self, entry: RolloutEntry, outcome: ExecutionOutcome | None) -> None:
        request = entry.request
        report: Any = None
        while entry.callbacks:
            phase, url, body = entry.callbacks[0]
            result = await self._sender.deliver(
                url, body, api_key=entry.callback_key, what=f"{phase} ({entry.rollout_id})"
            )
            if result.state is DeliveryState.EXHAUSTED:
                # Keep it: persisted now so a crash does not lose it, re-sent at the next start.
                record = self._outbox_record(entry)
                if record is not None and self._outbox is not None:
                    await asyncio.to_thread(self._outbox.write, [record])
                    entry.callbacks = None
                break
            entry.callbacks.pop(0)
            if result.state is DeliveryState.DELIVERED:
                ack_report = self._ack_report(result.ack)
                if ack_report is not None:
                    report = ack_report
        if not entry.callbacks:
            entry.callbacks = None
        entry.request = None
        if outcome is not None and request is not None:
            await self._save(entry.rollout_id, request, outcome, report)

    def _ack_report(self, ack: Any) -> Any:
        if not isinstance(ack, dict) or not isinstance(ack.get("trajectory"), dict):
            return None
        if self._report_type is None:
            return None
        try:
            return self._report_type.from_dict(ack["trajectory"])
        except Exception:
            logger.warning("ignoring an invalid trajectory report in a callback acknowledgement")
            return None

    async def _save(
        self,
        rollout_id: str,
        request: RolloutInitRequest,
        outcome: ExecutionOutcome,
        report: Any,
    ) -> None:
        """Write the ATIF trajectory (the writer itself keeps file I/O off the loop)."""
        save = self._save_trajectory
        if save is None or self._trajectory_slots is None:
            return
        result = outcome.result_to_save
        try:
            async with self._trajectory_slots:
                await save(
                    rollout_id=rollout_id,
                    result=result,
                    request_label=request.label,
                    request_metadata=request.metadata,
                    request_extra_fields=request.extra_fields,
                    report=report,
                    diagnostics=result.extra_fields,
                )
        except Exception:  # the writer promises not to raise; a bug there must not spread
            logger.exception("saving the trajectory of rollout %s failed", rollout_id)

    # ---- retention and outbox -------------------------------------------------------------

    async def _sweep_forever(self) -> None:
        interval = min(max(self.settings.result_retention_sec / 4, 0.05), 5.0)
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval)
            self._evict(loop.time())

    def _evict(self, now: float) -> None:
        order = self._finished_order
        retention = self.settings.result_retention_sec
        cap = self.settings.max_retained_results
        while order:
            entry = order[0]
            if self.entries.get(entry.rollout_id) is not entry:
                order.popleft()
                continue
            over_cap = len(order) > cap
            if not over_cap and now - entry.finished_at < retention:
                return
            if entry.callbacks or (entry.task is not None and not entry.task.done()):
                return  # still delivering or unwinding; try again on the next sweep
            if over_cap and not entry.fetched and entry.uses_lease:
                logger.warning(
                    "dropping the unfetched result of rollout %s: max_retained_results=%d reached",
                    entry.rollout_id,
                    cap,
                )
            order.popleft()
            del self.entries[entry.rollout_id]

    def _outbox_record(self, entry: RolloutEntry) -> dict[str, Any] | None:
        if not entry.finished:
            return None
        pending = entry.callbacks or []
        if not pending and (entry.fetched or not entry.uses_lease):
            return None
        return {
            "rollout_id": entry.rollout_id,
            "lease_sha256": entry.lease_digest.hex(),
            "uses_lease": entry.uses_lease,
            "result": entry.result.decode(),
            "status": entry.status.value,
            "reward": entry.reward,
            "err_message": entry.err_message,
            "callbacks": [
                {"phase": phase, "url": url, "body": body.decode()} for phase, url, body in pending
            ],
            "authorization": entry.callback_key if pending else None,
        }

    def _restore(self, record: dict[str, Any]) -> None:
        try:
            rollout_id = record["rollout_id"]
            entry = RolloutEntry(rollout_id, bytes.fromhex(record["lease_sha256"]))
            entry.uses_lease = bool(record.get("uses_lease", True))
            entry.result = record["result"].encode()
            entry.status = RolloutStatus(record["status"])
            entry.reward = record.get("reward")
            entry.err_message = record.get("err_message")
            callbacks = [
                (str(c["phase"]), str(c["url"]), str(c["body"]).encode())
                for c in record.get("callbacks") or []
            ]
        except (KeyError, TypeError, ValueError) as exc:
            logger.error("skipping a malformed outbox record: %s", exc)
            return
        entry.finished = True
        entry.started = True
        entry.finished_at = (self._loop or asyncio.get_running_loop()).time()
        entry.progress = _FINISHED
        self.entries[rollout_id] = entry
        self._finished_order.append(entry)
        if callbacks:
            entry.callbacks = callbacks
            entry.callback_key = record.get("authorization")
            self._spawn_delivery(entry, None)

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
        known: dict[str, Any] | None = None
        try:
            known = self.backend.rollout_status(rollout_id)
        except Exception:
            logger.exception("backend.rollout_status raised for rollout %s", rollout_id)
        if isinstance(known, dict) and known.get("status") in RolloutStatus._value2member_map_:
            return {
                "rollout_id": rollout_id,
                "status": known["status"],
                "reward": known.get("reward"),
                "err_message": known.get("err_message"),
            }
        return {"rollout_id": rollout_id, "status": "unknown", "reward": None, "err_message": None}
