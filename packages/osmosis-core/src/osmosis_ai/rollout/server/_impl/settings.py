"""Validated settings of one rollout server (constructor arguments, checked once).

:class:`ServerSettings` is the one list of the server's options and their defaults:
``create_rollout_server`` keeps its public keyword names but takes each
default from here, and builds a ``ServerSettings`` from exactly its :data:`SERVER_KEYWORDS`
(a core test checks that the keywords and the fields agree). A new option is a field here, a
keyword there, and its consumer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path

DEFAULT_RESULT_WAIT_TIMEOUT_SEC = 30.0
DEFAULT_POLLING_LEASE_TIMEOUT_SEC = 120.0
DEFAULT_RESULT_RETENTION_SEC = 900.0
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_RETAINED_RESULTS = 20_000
# Encoded result bytes kept in memory for fetching (oldest evicted first, with a warning).
DEFAULT_MAX_RETAINED_BYTES = 1024 * 1024 * 1024
DEFAULT_CALLBACK_RETRY_BUDGET_SEC = 600.0
DEFAULT_DRAIN_GRACE_SEC = 10.0
# After the grace period, cancelled rollouts get this long to unwind before they are abandoned.
DEFAULT_CANCEL_CLEANUP_SEC = 10.0
# At shutdown, callbacks being delivered get this long before they are written to the outbox.
DEFAULT_CALLBACK_FLUSH_SEC = 5.0
RETRY_AFTER_SEC = 5


def _finite(value: float) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


@dataclass(frozen=True, slots=True)
class ServerSettings:
    result_wait_timeout_sec: float = DEFAULT_RESULT_WAIT_TIMEOUT_SEC
    polling_lease_timeout_sec: float = DEFAULT_POLLING_LEASE_TIMEOUT_SEC
    result_retention_sec: float = DEFAULT_RESULT_RETENTION_SEC
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_retained_results: int = DEFAULT_MAX_RETAINED_RESULTS
    max_retained_bytes: int = DEFAULT_MAX_RETAINED_BYTES
    callback_retry_budget_sec: float = DEFAULT_CALLBACK_RETRY_BUDGET_SEC
    callback_backoff_initial_sec: float = 0.5
    callback_backoff_max_sec: float = 30.0
    callback_timeout_sec: float = 10.0
    callback_flush_sec: float = DEFAULT_CALLBACK_FLUSH_SEC
    drain_grace_sec: float = DEFAULT_DRAIN_GRACE_SEC
    cancel_cleanup_sec: float = DEFAULT_CANCEL_CLEANUP_SEC
    outbox_dir: Path | None = None
    save_trajectories: bool = True
    protocol_thread: bool = True
    worker_nice: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.outbox_dir, str):  # create_rollout_server accepts str | Path
            object.__setattr__(self, "outbox_dir", Path(self.outbox_dir))
        for name in (
            "result_wait_timeout_sec",
            "polling_lease_timeout_sec",
            "result_retention_sec",
        ):
            value = getattr(self, name)
            if isinstance(value, int) and not isinstance(value, bool):
                object.__setattr__(self, name, float(value))
        wait, lease = self.result_wait_timeout_sec, self.polling_lease_timeout_sec
        if not _finite(wait) or wait <= 0:
            raise ValueError("result_wait_timeout_sec must be finite and greater than zero")
        if not _finite(self.result_retention_sec) or self.result_retention_sec < 0:
            raise ValueError("result_retention_sec must be finite and non-negative")
        if not _finite(lease) or lease <= 0:
            raise ValueError("timeout_sec must be finite and greater than zero")
        if lease <= wait:
            raise ValueError("polling_lease_timeout_sec must exceed result_wait_timeout_sec")
        if not isinstance(self.max_body_bytes, int) or self.max_body_bytes < 1024:
            raise ValueError("max_body_bytes must be an integer of at least 1024")
        if not isinstance(self.max_retained_results, int) or self.max_retained_results < 1:
            raise ValueError("max_retained_results must be a positive integer")
        if not isinstance(self.max_retained_bytes, int) or self.max_retained_bytes < 1:
            raise ValueError("max_retained_bytes must be a positive integer")
        for name in (
            "callback_retry_budget_sec",
            "callback_backoff_initial_sec",
            "callback_backoff_max_sec",
            "callback_timeout_sec",
            "callback_flush_sec",
            "drain_grace_sec",
            "cancel_cleanup_sec",
        ):
            value = getattr(self, name)
            if not _finite(value) or value < 0:
                raise ValueError(f"{name} must be finite and non-negative")
        if self.callback_timeout_sec <= 0:
            raise ValueError("callback_timeout_sec must be greater than zero")
        nice = self.worker_nice
        if nice is not None and (isinstance(nice, bool) or not isinstance(nice, int)):
            raise ValueError(f"worker_nice must be an integer from 0 to 19 or None, got {nice!r}")
        if nice is not None and not 0 <= nice <= 19:
            raise ValueError(
                f"worker_nice must be from 0 (the server's CPU priority) to 19 (the lowest), "
                f"got {nice}; None takes OSMOSIS_ROLLOUT_WORKER_NICE or the default 5"
            )


# Fields with no create_rollout_server keyword (set through ServerSettings only).
SETTINGS_ONLY = frozenset({"callback_flush_sec"})
# The create_rollout_server keywords that are ServerSettings fields, in field order.
SERVER_KEYWORDS = tuple(f.name for f in fields(ServerSettings) if f.name not in SETTINGS_ONLY)
