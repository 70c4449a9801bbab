"""``ExecutionBackend``: the contract between the rollout server and whatever runs rollouts.

Backends run work and own the truth about its lifecycle (queued, running, grading, done); the
server owns the protocol (admission, leases, polls, callbacks, drain, trajectory saving).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest

CANCELLED_QUEUED = "cancelled_queued"
CANCELLED_RUNNING = "cancelled_running"
NOT_FOUND = "not_found"


class ExecutionBackend(ABC):
    """Runs rollouts. Only :meth:`execute` is required; the rest have safe defaults."""

    @abstractmethod
    async def execute(self, request: ExecutionRequest) -> ExecutionOutcome:
        """Run the workflow (and the grader when ``request.grade``) and report both phases.

        Must not raise for failures of rollout code: those are reported in the outcome with a
        category. Cancellation of the calling task cancels the rollout.
        """

    def has_capacity(self) -> bool:
        """``False`` makes the server answer 429 with ``Retry-After`` instead of queueing."""
        return True

    def rollout_status(self, rollout_id: str) -> dict[str, Any] | None:
        """``{"status": ..., "reward"?: ..., "err_message"?: ...}`` or ``None`` if unknown.

        A backend that reports ``not_found`` from :meth:`cancel_rollouts` for finished work must
        keep the terminal status here until the result has been delivered.
        """
        return None

    def cancel_rollouts(
        self, ids: list[str] | None = None, prefix: str | None = None, all: bool = False
    ) -> dict[str, str]:
        """Cancel by ``ids``, ``prefix`` or ``all``; return ``{id: disposition}``.

        Dispositions: ``cancelled_queued``, ``cancelled_running``, ``not_found``. An empty dict
        means "not supported": the server then cancels its own task.
        """
        return {}

    def health(self) -> dict[str, Any]:
        return {"status": "ok"}

    async def shutdown(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release resources; called once by the server after draining."""
