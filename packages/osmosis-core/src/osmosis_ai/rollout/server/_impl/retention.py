"""Finished results: how long the server keeps them, and how they survive a restart.

:class:`RetainedResults` forgets finished entries past ``result_retention_sec`` or beyond
``max_retained_results`` (oldest first, never one still delivering or unwinding).
:func:`admission_line` and :func:`done_line` encode an admission and a finished entry that
nobody has received yet as journal lines; :func:`entry_from_record` turns a record back.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import time
from collections.abc import Callable
from json.encoder import encode_basestring_ascii as _quote
from typing import Any

from osmosis_ai._util.redaction import process_redactor
from osmosis_ai.rollout.server._impl.entry import FINISHED, RolloutEntry
from osmosis_ai.rollout.types.enums import RolloutStatus

logger = logging.getLogger("osmosis_ai.rollout.server")

#: Callbacks that could not be delivered are kept in the outbox and re-sent at every start for
#: this long (wall clock) after they were first journaled, then dropped with an error.
PENDING_CALLBACKS_KEEP_SEC = 24 * 3600.0


class RetainedResults:
    """The order in which results finished, and their eviction (event-loop thread only)."""

    def __init__(
        self,
        entries: dict[str, RolloutEntry],
        *,
        retention_sec: float,
        max_results: int,
        max_bytes: int,
        forget: Callable[[RolloutEntry], None],
    ) -> None:
        self._entries = entries
        self._order: collections.deque[RolloutEntry] = collections.deque()
        self.retention_sec = retention_sec
        self.max_results = max_results
        self.max_bytes = max_bytes
        self.bytes = 0
        self._forget = forget

    def add(self, entry: RolloutEntry, now: float) -> None:
        self._order.append(entry)
        self.bytes += len(entry.result)
        if len(self._order) > self.max_results or self.bytes > self.max_bytes:
            self.evict(now)

    async def sweep_forever(self) -> None:
        interval = min(max(self.retention_sec / 4, 0.05), 5.0)
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval)
            self.evict(loop.time())

    def evict(self, now: float) -> None:
        order = self._order
        entries = self._entries
        while order:
            entry = order[0]
            if entries.get(entry.rollout_id) is not entry:
                order.popleft()
                self.bytes -= len(entry.result)
                continue
            over_cap = len(order) > self.max_results or self.bytes > self.max_bytes
            if not over_cap and now - entry.finished_at < self.retention_sec:
                return
            if entry.callbacks or (entry.task is not None and not entry.task.done()):
                return  # still delivering or unwinding; try again on the next sweep
            if over_cap and not entry.fetched and entry.uses_lease:
                logger.warning(
                    "dropping the unfetched result of rollout %s: max_retained_results=%d or "
                    "max_retained_bytes=%d reached",
                    entry.rollout_id,
                    self.max_results,
                    self.max_bytes,
                )
            order.popleft()
            self.bytes -= len(entry.result)
            del entries[entry.rollout_id]
            self._forget(entry)


def admission_line(entry: RolloutEntry, callback_urls: list[str]) -> bytes:
    """The journal line of an admission: enough to answer a retried admission and, after a
    crash, to report the rollout as failed (to its poller, or to its callback receivers)."""
    key = entry.callback_key if callback_urls else None
    return (
        f'{{"op":"admit","id":{_quote(entry.rollout_id)},"lease_sha256":"{entry.lease_digest.hex()}",'
        f'"salt":"{entry.salt.hex()}","fp":"{entry.fingerprint.hex()}",'
        f'"uses_lease":{"true" if entry.uses_lease else "false"},'
        f'"callback_urls":[{",".join(map(_quote, callback_urls))}],"authorization":{_text(key)}}}\n'
    ).encode()


def needs_record(entry: RolloutEntry) -> bool:
    """Whether ``entry`` is a finished result the outbox must keep (not received yet)."""
    if not entry.finished:
        return False
    return bool(entry.callbacks) or (entry.uses_lease and not entry.fetched)


def done_line(entry: RolloutEntry) -> bytes | None:
    """The journal line of a finished result not yet received (``None`` if there is none).

    The result's wire bytes go in as they are (the last member, ``"result"``, after its length
    ``"rlen"``), so they are neither encoded again nor escaped; :func:`.outbox.replay` takes them
    back byte for byte."""
    if not needs_record(entry):
        return None
    # No credential of this process (an upstream's echo of a key) goes to the journal; the
    # callbacks' authorization is the controller's and is kept (it is needed to re-send them).
    secrets = process_redactor()
    result = entry.result
    err_message = entry.err_message
    if secrets.secrets:
        result = secrets.redact_bytes(result)
        err_message = None if err_message is None else secrets(err_message)
    pending = entry.callbacks or []
    callbacks = ",".join(
        f'{{"phase":{_quote(phase)},"url":{_quote(url)},"body":{_quote(body.decode())}}}'
        for phase, url, body in pending
    )
    reward = entry.reward
    since = ""
    if pending:  # when its callbacks were first journaled: they expire (PENDING_CALLBACKS_KEEP_SEC)
        if not entry.pending_since:
            entry.pending_since = time.time()
        since = f'"since":{entry.pending_since!r},'
    head = (
        f'{{"op":"done","id":{_quote(entry.rollout_id)},"lease_sha256":"{entry.lease_digest.hex()}",'
        f'"salt":"{entry.salt.hex()}","fp":"{entry.fingerprint.hex()}",'
        f'"uses_lease":{"true" if entry.uses_lease else "false"},"status":"{entry.status.value}",'
        f'"reward":{"null" if reward is None else _number(reward)},'
        f'"err_message":{_text(err_message)},"callbacks":[{callbacks}],'
        f'"authorization":{_text(entry.callback_key if pending else None)},{since}'
        f'"rlen":{len(result)},"result":'
    ).encode()
    return head + result + b"}\n"


def _number(value: float) -> str:
    """``json.dumps(value)`` without building an encoder per call: for a float (a reward always
    is one) that is ``float.__repr__``, exactly what the encoder writes for a finite float."""
    return float.__repr__(value) if type(value) is float else json.dumps(value)


def _text(value: str | None) -> str:
    return "null" if value is None else _quote(value)


def entry_from_record(record: dict[str, Any], now: float) -> RolloutEntry | None:
    """A finished entry restored from a ``done`` record (``None``, logged, if malformed)."""
    try:
        entry = RolloutEntry(record["id"], bytes.fromhex(record["lease_sha256"]))
        entry.salt = bytes.fromhex(record.get("salt") or "")
        entry.fingerprint = bytes.fromhex(record.get("fp") or "")
        entry.uses_lease = bool(record.get("uses_lease", True))
        entry.result = record["result"].encode()
        entry.status = RolloutStatus(record["status"])
        entry.reward = record.get("reward")
        entry.err_message = record.get("err_message")
        callbacks = [
            (str(c["phase"]), str(c["url"]), str(c["body"]).encode())
            for c in record.get("callbacks") or []
        ]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        logger.error("skipping a malformed outbox record: %s", exc)
        return None
    entry.finished = True
    entry.started = True
    entry.finished_at = now
    entry.progress = FINISHED
    entry.journaled = True
    if callbacks:
        entry.callbacks = callbacks
        entry.callback_key = record.get("authorization")
        since = record.get("since")
        # A record of an older version has no time: its clock starts now.
        entry.pending_since = float(since) if isinstance(since, int | float) else time.time()
    return entry


def callbacks_expired(entry: RolloutEntry) -> bool:
    """Whether ``entry``'s undelivered callbacks are past :data:`PENDING_CALLBACKS_KEEP_SEC`
    (re-sent at every start until then, then dropped, logged: a receiver gone for good must
    not keep its results in the outbox for ever)."""
    if not entry.callbacks or time.time() - entry.pending_since <= PENDING_CALLBACKS_KEEP_SEC:
        return False
    logger.error(
        "dropping the undelivered callbacks of rollout %s: kept %.0f h since they were first "
        "journaled and never answered",
        entry.rollout_id,
        PENDING_CALLBACKS_KEEP_SEC / 3600,
    )
    return True


#: :func:`restore_record`: the outbox keeps the record as it is.
UNCHANGED: Any = object()


def restore_record(record: dict[str, Any], now: float) -> tuple[RolloutEntry | None, Any]:
    """The entry a live journal record restores (``None``: nothing) and what the outbox must
    record for it now: a ``done`` line (a rollout the restart ended: ``internal_error``),
    ``None`` (acknowledged: its callbacks expired) or :data:`UNCHANGED`."""
    if record.get("op") == "admit":
        # Admitted, never finished: the server stopped without a trace of it (kill -9).
        entry = restarted_entry(record, now)
        return entry, UNCHANGED if entry is None else done_line(entry)
    entry = entry_from_record(record, now)
    if entry is not None and callbacks_expired(entry):
        return None, None
    return entry, UNCHANGED


SERVER_RESTARTED_MESSAGE = (
    "server_restarted: the rollout server stopped (crashed or was killed) before the rollout "
    "finished; its result is lost, submit the rollout again"
)


def restarted_entry(record: dict[str, Any], now: float) -> RolloutEntry | None:
    """The terminal failure of a rollout admitted before a crash that never finished
    (``internal_error``; callbacks to its receivers, if it had them)."""
    from osmosis_ai.rollout.server._impl import wire
    from osmosis_ai.rollout.types.enums import RolloutErrorCategory
    from osmosis_ai.rollout.types.execution import ExecutionResult

    result = ExecutionResult(
        status=RolloutStatus.FAILURE,
        err_message=SERVER_RESTARTED_MESSAGE,
        err_category=RolloutErrorCategory.INTERNAL_ERROR,
    )
    try:
        rollout_id = record["id"]
        urls = [str(u) for u in record.get("callback_urls") or []]
        entry = entry_from_record(
            {
                **record,
                "result": wire.result_json(rollout_id, result).decode(),
                "status": RolloutStatus.FAILURE.value,
                "reward": None,
                "err_message": SERVER_RESTARTED_MESSAGE,
                "callbacks": [],
            },
            now,
        )
    except (KeyError, TypeError, ValueError) as exc:
        logger.error("skipping a malformed outbox record: %s", exc)
        return None
    if entry is not None and urls:
        bodies = [wire.completion_json(rollout_id, result), wire.grader_json(rollout_id, None)]
        entry.callbacks = [
            (phase, url, body)
            for phase, url, body in zip(("completion", "grader"), urls, bodies, strict=False)
        ]
        entry.callback_key = record.get("authorization")
    return entry
