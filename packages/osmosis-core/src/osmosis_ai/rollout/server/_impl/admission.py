"""Admission: ``POST /rollout`` becomes a registered entry, a scheduled execution task and an
admission line in the outbox, or an :class:`~.entry.AdmissionError` (503 draining, 429 full,
409 a different body under a known id, 500 could not schedule). The same id with the same body
again (a controller retrying an admission whose response it lost) is answered with the same
admission: the same lease token, the lease renewed (a new token when the rollout was restored
from an outbox whose ``lease.key`` has since been lost: the old one cannot be derived again).

:class:`Admission` is a collaborator of :class:`~.service.RolloutService` with its own state (the
lease key tokens are derived under, the outbox admissions are journaled to); the service gives it
the registry, the drain (is it accepting?), the leases (arm, renew) and, as callables, the
capacity check and how to start an execution. Same event loop, no locks.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.server._impl import compat, wire
from osmosis_ai.rollout.server._impl.entry import AdmissionError, RolloutEntry
from osmosis_ai.rollout.server._impl.retention import admission_line, done_line, needs_record
from osmosis_ai.rollout.types.execution import ExecutionRequest
from osmosis_ai.rollout.types.protocol import RolloutInitRequest

if TYPE_CHECKING:
    from osmosis_ai.rollout.server._impl.drain import Drain
    from osmosis_ai.rollout.server._impl.lease import LeaseKey
    from osmosis_ai.rollout.server._impl.outbox import Outbox
    from osmosis_ai.rollout.server._impl.ownership import OwnershipTelemetry
    from osmosis_ai.rollout.server._impl.polling import Leases
    from osmosis_ai.rollout.server._impl.settings import ServerSettings

logger = logging.getLogger("osmosis_ai.rollout.server")


class Admission:
    """Admits rollouts into the registry ``entries``."""

    def __init__(
        self,
        settings: ServerSettings,
        entries: dict[str, RolloutEntry],
        *,
        process_id: str,
        lease_key: LeaseKey,
        drain: Drain,
        leases: Leases,
        has_capacity: Callable[[], bool],
        run: Callable[[RolloutEntry, ExecutionRequest], Coroutine[Any, Any, None]],
        scheduled: Callable[[RolloutEntry, asyncio.Task[None]], None],
    ) -> None:
        self._settings = settings
        self._entries = entries
        self._process_id = process_id
        self._drain = drain
        self._leases = leases
        self._has_capacity = has_capacity
        self._run = run
        self._scheduled = scheduled
        self.lease_key = lease_key  # the outbox's persistent key, once started
        self.outbox: Outbox | None = None  # once started
        self.loop: asyncio.AbstractEventLoop | None = None  # the service's, once started
        #: Ownership telemetry (``OSMOSIS_ROLLOUT_OTLP_ENDPOINT`` set), once started.
        self.ownership: OwnershipTelemetry | None = None

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
        outbox = self.outbox
        return payload, outbox.written() if outbox is not None else None

    def _admit(
        self, request: RolloutInitRequest, fingerprint: bytes, *, journal_now: bool = True
    ) -> tuple[RolloutEntry, bytes]:
        rollout_id = request.rollout_id or uuid.uuid4().hex
        existing = self._entries.get(rollout_id)
        if existing is not None and existing.fingerprint == fingerprint and existing.uses_lease:
            return existing, self._readmit(existing)
        if not self._drain.accepting:
            raise AdmissionError(503, "rollout server is shutting down")
        if not self._has_capacity():
            raise AdmissionError(429, "rollout queue is full; retry later")
        if existing is not None:
            # 0.3.8's exact body; the same request again would have been re-admitted above.
            raise AdmissionError(409, "rollout_id is already registered")
        salt = self.lease_key.new_salt()
        token, digest = self.lease_key.derive(salt)
        entry = RolloutEntry(rollout_id, digest)
        entry.salt = salt
        entry.fingerprint = fingerprint
        entry.request = request
        loop = self.loop or asyncio.get_running_loop()
        callbacks = request.completion_callback_url is not None
        task: asyncio.Task[None] | None = None
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
                api_key=compat.policy_api_key(request, callbacks),
                process_id=self._process_id,
            )
            if callbacks:
                entry.uses_lease = False
                entry.callback_key = request.controller_api_key or None
            else:
                self._leases.arm(entry, loop)
            self._entries[rollout_id] = entry
            # The task first: its first step then runs before this turn's journal write (when
            # that is not scheduled yet), so a rollout that finishes in that step (a no-op) is
            # written once, as its result, and never as an admission.
            task = loop.create_task(self._run(entry, exec_request))
            self._journal_admission(entry, request, journal_now)
        except Exception as exc:
            if task is not None:
                task.cancel()
            self._entries.pop(rollout_id, None)
            logger.exception("could not schedule rollout %s", rollout_id)
            raise AdmissionError(500, "could not schedule the rollout; see the server log") from exc
        self._scheduled(entry, task)
        if self.ownership is not None:
            self._observe(entry, request, self.ownership)
        return entry, self._admission_body(rollout_id, token)

    @staticmethod
    def _observe(
        entry: RolloutEntry, request: RolloutInitRequest, ownership: OwnershipTelemetry
    ) -> None:
        """Record ``queued`` and watch the rollout's status from here to its terminal one (the
        task has not run yet: it cannot have moved on)."""
        observer = ownership.observe(entry.rollout_id, request.metadata)
        if observer is not None:
            entry.progress.on_status = observer
            observer(entry.progress.status)

    def _admission_body(self, rollout_id: str, token: str) -> bytes:
        settings = self._settings
        return (
            f'{{"rollout_id":{wire.encode_json(rollout_id).decode()},"status":"queued",'
            f'"polling_lease_token":"{token}",'
            f'"result_wait_timeout_sec":{settings.result_wait_timeout_sec!r},'
            f'"polling_lease_timeout_sec":{settings.polling_lease_timeout_sec!r}}}'
        ).encode()

    def _readmit(self, entry: RolloutEntry) -> bytes:
        """The admission of ``entry`` again (same token), its lease renewed."""
        token, digest = self.lease_key.derive(entry.salt)
        if digest != entry.lease_digest:
            token = self._rekey(entry)
        self._leases.renew(entry)
        return self._admission_body(entry.rollout_id, token)

    def _rekey(self, entry: RolloutEntry) -> str:
        """A restored rollout admitted under a lease key the outbox no longer has (``lease.key``
        was deleted or replaced): its token cannot be derived again, so the same request (the
        same body: what authorizes a retried admission) gets a new token, journaled so it
        survives the next restart too. The first token no longer polls."""
        salt = self.lease_key.new_salt()
        token, digest = self.lease_key.derive(salt)
        entry.salt, entry.lease_digest = salt, digest
        logger.warning(
            "rollout %s was admitted under a lease key this outbox no longer has (lease.key "
            "removed or replaced); its retried admission gets a new lease token",
            entry.rollout_id,
        )
        # Only restored rollouts can have been admitted under another key, and a restored
        # rollout is finished: its result line (if still unreceived) carries the new digest.
        if self.outbox is not None and needs_record(entry):
            self.outbox.write_now(entry.rollout_id, done_line(entry))
        return token

    def _journal_admission(
        self, entry: RolloutEntry, request: RolloutInitRequest, now: bool
    ) -> None:
        outbox = self.outbox
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
