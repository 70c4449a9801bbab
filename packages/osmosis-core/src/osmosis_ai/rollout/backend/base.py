"""``ExecutionBackend``: the contract between the rollout server and whatever runs rollouts.

The server owns a rollout's lifecycle: admission, status, leases, polls, callbacks,
cancellation, drain, the outbox and trajectory saving. A backend only runs work:

* ``await execute(request, progress) -> ExecutionOutcome`` runs the workflow (and the grader
  when ``request.grade``). The backend enters a :class:`~osmosis_ai.rollout.context.
  RolloutContext` built from the request (:func:`~osmosis_ai.rollout.context.
  rollout_context_for`) around user code, and reports progress through ``progress``: ``running``
  once the rollout holds whatever slot it waits for, ``grading`` before the grader. The server
  reads status from that one object. Cancellation is the server cancelling the task that awaits
  ``execute``; the backend releases what it holds and lets ``CancelledError`` propagate.
* ``has_capacity()``: ``False`` makes the server answer 429 instead of admitting.
  ``has_capacity_for(pending)`` is what the server asks: the same question while ``pending``
  admitted rollouts have not reached ``execute`` yet (the server admits many in one event-loop
  turn, their tasks start in the next), so a bounded queue stays exact under concurrent
  admission. Its default ignores ``pending`` and asks ``has_capacity()``.
* ``health()``: merged into the server's ``/health``.
* ``await shutdown()``: called once after the server has drained.

Backends written for osmosis-ai 0.3.8 (``execute(self, request)``, reading the ambient
context) keep working: the server sees that ``execute`` takes no ``progress`` and then enters
the context itself and reports ``running`` when the call starts, as 0.3.8 did.
``rollout_status`` and ``cancel_rollouts`` keep 0.3.8's signatures and defaults for code that
calls them, but the server no longer does.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from osmosis_ai.rollout.context import RolloutProgress
    from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest

CANCELLED_QUEUED = "cancelled_queued"
CANCELLED_RUNNING = "cancelled_running"
NOT_FOUND = "not_found"


class ExecutionBackend(ABC):
    """Runs rollouts. Only :meth:`execute` is required; the rest have safe defaults."""

    @abstractmethod
    async def execute(
        self, request: ExecutionRequest, progress: RolloutProgress | None = None
    ) -> ExecutionOutcome:
        """Run the workflow (and the grader when ``request.grade``) and report both phases.

        Must not raise for failures of rollout code: those are reported in the outcome with a
        category. ``progress`` (``None`` outside a server) receives ``running`` and
        ``grading``. Cancelling the calling task cancels the rollout.
        """

    def has_capacity(self) -> bool:
        """``False`` makes the server answer 429 with ``Retry-After`` instead of queueing."""
        return True

    def has_capacity_for(self, pending: int) -> bool:
        """Whether one more rollout fits while ``pending`` admitted ones have not reached
        :meth:`execute` yet (a backend that bounds a queue counts them, so the bound is exact
        under concurrent admission). Default: :meth:`has_capacity`."""
        return self.has_capacity()

    def health(self) -> dict[str, Any]:
        return {"status": "ok"}

    async def shutdown(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release resources; called once by the server after draining."""

    # -- 0.3.8 names kept for callers; the server does not use them ---------------------------

    def rollout_status(self, rollout_id: str) -> dict[str, Any] | None:
        """0.3.8's per-rollout status hook; ``None`` (unknown). The server's ``/status`` is
        the one source of a rollout's status."""
        return None

    def cancel_rollouts(
        self, ids: list[str] | None = None, prefix: str | None = None, all: bool = False
    ) -> dict[str, str]:
        """0.3.8's cancel hook; ``{}`` (not supported). Cancel through the server
        (``POST /rollout/cancel``) or by cancelling the task awaiting :meth:`execute`."""
        return {}


def accepts_progress(backend: ExecutionBackend) -> bool:
    """Whether ``backend.execute`` takes the ``progress`` argument (0.3.8 backends do not)."""
    try:
        parameters = inspect.signature(backend.execute).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in positional)


async def execute_legacy(
    backend: ExecutionBackend, request: ExecutionRequest, progress: RolloutProgress
) -> ExecutionOutcome:
    """Run a 0.3.8 backend (``execute(request)``, no ``progress``) as 0.3.8's server did: report
    ``running`` at once and enter the request's :class:`RolloutContext` around the call. The
    server and the worker processes both run such backends through here."""
    from osmosis_ai.rollout.context import rollout_context_for
    from osmosis_ai.rollout.types.enums import RolloutStatus

    await progress.set_status(RolloutStatus.RUNNING)
    with rollout_context_for(request, progress):
        return await backend.execute(request)  # type: ignore[call-arg]
