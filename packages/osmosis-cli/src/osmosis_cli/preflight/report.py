"""What a preflight found: one :class:`Check` per step, in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["ok", "warning", "error", "skipped"]


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: Status
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "status": self.status, "message": self.message}
        if self.details:
            out["details"] = self.details
        return out


@dataclass
class PreflightReport:
    rollout: str
    entrypoint: str
    workspace: str | None
    checks: list[Check] = field(default_factory=list)

    def add(self, check: Check) -> Check:
        self.checks.append(check)
        return check

    @property
    def ok(self) -> bool:
        return not any(c.status == "error" for c in self.checks)

    @property
    def warnings(self) -> list[Check]:
        return [c for c in self.checks if c.status == "warning"]

    def as_dict(self) -> dict[str, Any]:
        return {
            "rollout": self.rollout,
            "entrypoint": self.entrypoint,
            "workspace_directory": self.workspace,
            "checks": [c.as_dict() for c in self.checks],
        }
