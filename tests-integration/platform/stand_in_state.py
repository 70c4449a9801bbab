"""The stand-in platform's in-memory state, shared by its HTTP routes and the tests.

Tests drive it directly (add runs, append log lines, finish runs, inject faults, pause a
download) from the test thread while the server runs in another thread, so every change goes
through one condition variable and wakes long-polling requests.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

TERMINAL = {"succeeded", "failed", "cancelled"}
RUN_KINDS = {"eval-runs": "eval", "training-runs": "training", "benchmark-runs": "benchmark"}


def now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    query: dict[str, str] = field(default_factory=dict)


@dataclass
class Fault:
    """Answer ``times`` requests matching ``method`` and the ``path`` prefix with ``status``."""

    method: str
    path: str
    status: int
    times: int = 1  # -1: every time
    message: str = "injected failure"
    retry_after: str | None = None
    field: str | None = None  # the error's ``field`` (a platform may echo input there)
    redirect_to: str | None = None  # answer 307 to this URL (plus the request's path) instead


@dataclass
class Pause:
    """Stop a download of ``path`` after ``after_bytes`` until the test sets ``release``."""

    path: str
    after_bytes: int
    reached: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


@dataclass
class Artifact:
    type: str
    path: str
    content: bytes
    row_index: int | None = None

    def listing(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "path": self.path,
            "row_index": self.row_index,
            "size": len(self.content),
            "sha256": hashlib.sha256(self.content).hexdigest(),
        }


@dataclass
class PlatformState:
    """Users by token, runs, logs, artifacts, datasets, secrets, rollouts, the request log."""

    storage: Path | None = None  # where uploaded dataset bytes go (set by the fixture)
    part_size: int = 8 * 1024 * 1024
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    workspaces: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "stand-in": {"id": "w_1", "name": "stand-in"},
            "research": {"id": "w_2", "name": "research"},
        }
    )
    runs: dict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: {"eval": [], "training": [], "benchmark": []}
    )
    benchmarks: list[dict[str, Any]] = field(default_factory=list)  # the catalog
    submitted_benchmarks: list[dict[str, Any]] = field(default_factory=list)  # request bodies
    logs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    artifacts: dict[str, list[Artifact]] = field(default_factory=dict)
    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)
    dataset_logs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    uploads: dict[str, dict[str, Any]] = field(default_factory=dict)
    secrets: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    rollouts: list[dict[str, Any]] = field(default_factory=list)
    base_models: list[dict[str, Any]] = field(default_factory=list)
    lora_models: dict[str, dict[str, Any]] = field(default_factory=dict)
    max_active_deployments: int | None = 5  # None: inference not available (no quota fields)
    # browser sign-in (device grant): device_code -> {"user_code", "status", "token", "polls"}
    device_grants: dict[str, dict[str, Any]] = field(default_factory=dict)
    device_polled: threading.Event = field(default_factory=threading.Event)
    retried: list[tuple[str, dict[str, str]]] = field(default_factory=list)  # (run id, secrets)
    training_metrics: dict[str, dict[str, Any]] = field(default_factory=dict)  # run id -> body
    imports: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (id, digest)
    imported: dict[str, dict[str, Any]] = field(default_factory=dict)  # local_run_id -> run
    checkpoints: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # run id -> list
    requests: list[RecordedRequest] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    pauses: list[Pause] = field(default_factory=list)
    log_polls: list[tuple[str, int]] = field(default_factory=list)
    closed: bool = False
    changed: threading.Condition = field(default_factory=threading.Condition)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def decide_sign_in(self, user_code: str, status: str, token: str | None = None) -> None:
        """For tests: the person in the browser approves (``token``) or denies a sign-in."""
        grant = next(g for g in self.device_grants.values() if g["user_code"] == user_code)
        grant.update(status=status, token=token)

    def add_user(self, token: str, email: str) -> None:
        self.users[token] = {"id": f"u_{len(self.users) + 1}", "email": email, "name": None}

    def next_id(self) -> int:
        return next(self._ids)

    # -- runs and logs -------------------------------------------------------------------
    def add_run(self, kind: str, name: str, status: str = "running") -> dict[str, Any]:
        number = self.next_id()
        run = {
            "id": f"run_{number:04d}",
            "name": name,
            "kind": kind,
            "status": status,
            "model_name": "openai/gpt-5-mini",
            "dataset_name": "calc",
            "rollout": "calc",
            "created_at": now(),
            "updated_at": now(),
            "url": None,
            "metrics": None,
        }
        with self.changed:
            self.runs[kind].append(run)
            self.logs[run["id"]] = []
        return run

    def add_dataset(self, name: str, status: str = "uploaded") -> dict[str, Any]:
        """A dataset already on the platform (metadata only: no file to download)."""
        dataset = {
            "id": f"ds_{self.next_id():04d}",
            "name": name,
            "filename": f"{name}.jsonl",
            "format": "jsonl",
            "size_bytes": 0,
            "row_count": 4,
            "sha256": None,
            "status": status,
            "created_at": now(),
            "data_preview": None,
        }
        self.datasets[name] = dataset
        return dataset

    def find_run(self, kind: str, key: str) -> dict[str, Any] | None:
        return next((r for r in self.runs[kind] if key in (r.get("id"), r.get("name"))), None)

    def append_log(self, run: dict[str, Any], message: str, level: str = "info") -> None:
        with self.changed:
            self.logs.setdefault(run["id"], []).append(
                {"timestamp": now(), "level": level, "message": message}
            )
            self.changed.notify_all()

    def set_status(self, run: dict[str, Any], status: str) -> None:
        with self.changed:
            run["status"], run["updated_at"] = status, now()
            self.changed.notify_all()

    def wait_for_logs(self, run: dict[str, Any], start: int, timeout: float) -> None:
        """Block until the run has entries past ``start``, has ended, or ``timeout`` passes."""
        with self.changed:
            self.log_polls.append((run["id"], start))
            self.changed.notify_all()
            self.changed.wait_for(
                lambda: (
                    self.closed
                    or len(self.logs.get(run["id"], [])) > start
                    or run["status"] in TERMINAL
                ),
                timeout,
            )

    def wait_for_poll(self, run: dict[str, Any], start: int, timeout: float = 30) -> bool:
        """For tests: block until a client long-polls ``run``'s logs from ``start``."""
        with self.changed:
            return self.changed.wait_for(lambda: (run["id"], start) in self.log_polls, timeout)

    def close(self) -> None:
        with self.changed:
            self.closed = True
            self.changed.notify_all()
        for pause in self.pauses:
            pause.release.set()

    # -- faults --------------------------------------------------------------------------
    def take_fault(self, method: str, path: str) -> Fault | None:
        with self.changed:
            for fault in self.faults:
                if fault.method == method and path.startswith(fault.path) and fault.times != 0:
                    fault.times -= 1 if fault.times > 0 else 0
                    return fault
        return None
