"""Finished results: how long the server keeps them, and how they survive a restart.

:class:`RetainedResults` forgets finished entries past ``result_retention_sec`` or beyond
``max_retained_results`` (oldest first, never one still delivering or unwinding).
:func:`outbox_record` / :func:`entry_from_record` turn a finished entry that nobody has received
yet into an outbox record and back.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import Any

from osmosis_ai.rollout.server.entry import FINISHED, RolloutEntry
from osmosis_ai.rollout.types.enums import RolloutStatus

logger = logging.getLogger("osmosis_ai.rollout.server")


class RetainedResults:
    """The order in which results finished, and their eviction (event-loop thread only)."""

    def __init__(
        self, entries: dict[str, RolloutEntry], *, retention_sec: float, max_results: int
    ) -> None:
        self._entries = entries
        self._order: collections.deque[RolloutEntry] = collections.deque()
        self.retention_sec = retention_sec
        self.max_results = max_results

    def add(self, entry: RolloutEntry, now: float) -> None:
        self._order.append(entry)
        if len(self._order) > self.max_results:
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
                continue
            over_cap = len(order) > self.max_results
            if not over_cap and now - entry.finished_at < self.retention_sec:
                return
            if entry.callbacks or (entry.task is not None and not entry.task.done()):
                return  # still delivering or unwinding; try again on the next sweep
            if over_cap and not entry.fetched and entry.uses_lease:
                logger.warning(
                    "dropping the unfetched result of rollout %s: max_retained_results=%d reached",
                    entry.rollout_id,
                    self.max_results,
                )
            order.popleft()
            del entries[entry.rollout_id]


def outbox_record(entry: RolloutEntry) -> dict[str, Any] | None:
    """The outbox record of a finished result not yet received (``None`` if there is none)."""
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


def entry_from_record(record: dict[str, Any], now: float) -> RolloutEntry | None:
    """A finished entry restored from an outbox record (``None``, logged, if malformed)."""
    try:
        entry = RolloutEntry(record["rollout_id"], bytes.fromhex(record["lease_sha256"]))
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
        return None
    entry.finished = True
    entry.started = True
    entry.finished_at = now
    entry.progress = FINISHED
    if callbacks:
        entry.callbacks = callbacks
        entry.callback_key = record.get("authorization")
    return entry
