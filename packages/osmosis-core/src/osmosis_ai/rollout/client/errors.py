"""Errors raised by :class:`~osmosis_ai.rollout.client.RolloutClient`."""

from __future__ import annotations


class RolloutProtocolError(RuntimeError):
    """The rollout server answered outside the protocol (a status code or body it must not send).

    ``status_code`` is the HTTP status when there was one, else 0.
    """

    def __init__(self, message: str, *, status_code: int = 0) -> None:
        super().__init__(message)
        self.status_code = status_code


class RolloutAdmissionTimeoutError(TimeoutError):
    """The server kept answering 429 (queue full) until ``admission_timeout_sec`` ran out."""
