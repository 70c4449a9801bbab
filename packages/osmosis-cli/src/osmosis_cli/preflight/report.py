"""What a preflight found: one :class:`Check` per step, in order."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from osmosis_cli.output import Output

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

    def enforce(
        self, output: Output, *, kind: str = "", on_failure: Callable[[], None] | None = None
    ) -> None:
        """Raise a ``VALIDATION`` :class:`~osmosis_cli.errors.CLIError` naming the first failed
        check (``on_failure`` runs first); otherwise print each warning."""
        if not self.ok:
            from osmosis_cli.errors import CLIError, CLIErrorCode

            failed = next(c for c in self.checks if c.status == "error")
            if on_failure is not None:
                on_failure()
            what = f"{kind.capitalize()} preflight" if kind else "Preflight"
            raise CLIError(
                CLIErrorCode.VALIDATION,
                f"{what} failed for `{self.rollout}/{self.entrypoint}`:\n  {failed.message}",
                details={**failed.details, **self.as_dict()},
            )
        for check in self.warnings:
            output.warn("PREFLIGHT_WARNING", f"{check.name}: {check.message}", check=check.name)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rollout": self.rollout,
            "entrypoint": self.entrypoint,
            "workspace_directory": self.workspace,
            "checks": [c.as_dict() for c in self.checks],
        }
