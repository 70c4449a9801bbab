"""Getting a finished result to where it goes: trajectories, and the 0.3.0 callback protocol.

:class:`TrajectorySaver` queues each rollout's ATIF trajectory for the writer thread.
:class:`CallbackDelivery` is the whole 0.3.0 protocol: which callbacks a result produces, sending
them with retries, and parking what could not be delivered in the outbox. A poll-mode (0.3.8)
result needs no delivery: the controller fetches the stored bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.server._impl import wire
from osmosis_ai.rollout.server._impl.callbacks import (
    CallbackRetryPolicy,
    CallbackSender,
    DeliveryState,
)
from osmosis_ai.rollout.types.enums import RolloutStatus

if TYPE_CHECKING:
    from osmosis_ai.rollout.server._impl.entry import RolloutEntry
    from osmosis_ai.rollout.server._impl.settings import ServerSettings
    from osmosis_ai.rollout.types.execution import ExecutionOutcome
    from osmosis_ai.rollout.types.protocol import RolloutInitRequest

logger = logging.getLogger("osmosis_ai.rollout.server")

_SUCCESS = RolloutStatus.SUCCESS


class TrajectorySaver:
    """Queues trajectories for the writer thread (file I/O stays off the loop; nothing per
    rollout waits for it: no task, no future, no wake-up of the loop when a file is written)."""

    def __init__(self) -> None:
        self._queue: Callable[..., None] | None = None
        self._written: Callable[[], Coroutine[Any, Any, None]] | None = None
        self._room: Callable[[], Coroutine[Any, Any, None]] | None = None
        self._report_type: Any = None
        self._queued = False

    def start(self, enabled: bool) -> None:
        if not enabled:
            return
        try:
            from osmosis_ai.rollout.trajectory import TrajectoryReport, writer
        except ImportError as exc:  # the writer ships with core; guard against partial installs
            logger.warning("trajectory saving is disabled: %s", exc)
            return
        self._queue = writer.queue_trajectory
        self._written = writer.trajectories_written
        self._room = writer.trajectory_room
        self._report_type = TrajectoryReport

    def spawn_save(
        self, rollout_id: str, request: RolloutInitRequest, outcome: ExecutionOutcome
    ) -> None:
        self.save(rollout_id, request, outcome, None)

    def save(
        self,
        rollout_id: str,
        request: RolloutInitRequest,
        outcome: ExecutionOutcome,
        report: Any,
    ) -> None:
        queue = self._queue
        if queue is None:
            return
        try:
            queue(rollout_id, outcome.result_to_save, request, report)
            self._queued = True
        except Exception:  # the writer promises not to raise; a bug there must not spread
            logger.exception("saving the trajectory of rollout %s failed", rollout_id)

    async def room(self) -> None:
        """Wait while the writer's queue is at its bound (a finishing rollout holds its slot)."""
        if self._queued and self._room is not None:
            await self._room()

    def report_from_ack(self, ack: Any) -> Any:
        """A ``TrajectoryReport`` from a callback acknowledgement, if it carries one."""
        if not isinstance(ack, dict) or not isinstance(ack.get("trajectory"), dict):
            return None
        if self._report_type is None:
            return None
        try:
            return self._report_type.from_dict(ack["trajectory"])
        except Exception:
            logger.warning("ignoring an invalid trajectory report in a callback acknowledgement")
            return None

    async def drain(self, timeout: float) -> None:  # noqa: ASYNC109 - a bounded wait is the API
        """Wait (at most ``timeout`` seconds) until every queued trajectory is written."""
        if self._queued and self._written is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._written(), timeout)


class CallbackDelivery:
    """The 0.3.0 protocol: completion and grader callbacks, retried, then parked."""

    def __init__(
        self,
        settings: ServerSettings,
        trajectories: TrajectorySaver,
        acknowledge: Callable[[RolloutEntry], None],
    ) -> None:
        self._sender = CallbackSender(
            CallbackRetryPolicy(
                budget_sec=settings.callback_retry_budget_sec,
                initial_delay_sec=settings.callback_backoff_initial_sec,
                max_delay_sec=settings.callback_backoff_max_sec,
                request_timeout_sec=settings.callback_timeout_sec,
            )
        )
        self._trajectories = trajectories
        self._acknowledge = acknowledge
        self.tasks: set[asyncio.Task[None]] = set()

    def schedule(
        self,
        entry: RolloutEntry,
        request: RolloutInitRequest,
        outcome: ExecutionOutcome,
        forced: bool,
    ) -> None:
        """Encode the callbacks this result produces and start sending them."""
        assert request.completion_callback_url is not None
        completion = wire.completion_json(entry.rollout_id, outcome.workflow)
        pending = [("completion", request.completion_callback_url, completion)]
        if request.grader_callback_url is not None:
            grader = outcome.grader
            if forced or outcome.workflow.status != RolloutStatus.SUCCESS:
                grader = None
            if (
                grader is not None
                and grader is outcome.result
                and grader.status == _SUCCESS
                and entry.status == _SUCCESS
            ):
                body = entry.result  # the same bytes: the result, encoded once in _finalize
            else:
                body = wire.grader_json(entry.rollout_id, grader)
            pending.append(("grader", request.grader_callback_url, body))
        entry.callbacks = pending
        self.spawn(entry, outcome)

    def spawn(self, entry: RolloutEntry, outcome: ExecutionOutcome | None) -> None:
        """Send ``entry.callbacks`` (also for entries restored from the outbox: no outcome)."""
        task = asyncio.get_running_loop().create_task(self._deliver(entry, outcome))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _deliver(self, entry: RolloutEntry, outcome: ExecutionOutcome | None) -> None:
        request = entry.request
        report: Any = None
        while entry.callbacks:
            phase, url, body = entry.callbacks[0]
            result = await self._sender.deliver(
                url, body, api_key=entry.callback_key, what=f"{phase} ({entry.rollout_id})"
            )
            if result.state is DeliveryState.EXHAUSTED:
                # Parked: its outbox record stays (never acknowledged, even when this server
                # forgets it), so the next start re-sends it.
                entry.journaled = False
                entry.callbacks = None
                break
            entry.callbacks.pop(0)
            if result.state is DeliveryState.DELIVERED:
                ack_report = self._trajectories.report_from_ack(result.ack)
                if ack_report is not None:
                    report = ack_report
        if not entry.callbacks:
            if entry.callbacks is not None:
                self._acknowledge(entry)  # every callback was answered
            entry.callbacks = None
        entry.request = None
        if outcome is not None and request is not None:
            self._trajectories.save(entry.rollout_id, request, outcome, report)

    async def flush(self, timeout: float) -> None:  # noqa: ASYNC109 - a bounded wait is the API
        """Give deliveries ``timeout`` seconds, then stop them (what is left goes to the outbox)."""
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=timeout)
            for task in list(self.tasks):
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)

    async def aclose(self) -> None:
        await self._sender.aclose()
