"""The one exception a config loader raises: every problem of a file, each with its key path."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from osmosis_ai.errors import ConfigurationError


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """One problem: ``key`` is a dotted path such as ``experiment.rollout`` ("" = whole file)."""

    key: str
    message: str

    def render(self) -> str:
        return f"{self.key}: {self.message}" if self.key else self.message


class ConfigError(ConfigurationError):
    """A config file is missing, unreadable, not TOML, or breaks the schema.

    Raised once per file with *all* issues so a user fixes everything in one pass.
    """

    def __init__(self, kind: str, path: Path | None, issues: list[ConfigIssue]) -> None:
        self.kind = kind
        self.path = path
        self.issues = issues
        super().__init__(self.render())

    @property
    def header(self) -> str:
        where = f" {self.path}" if self.path is not None else ""
        return f"Invalid {self.kind} config{where}"

    def render(self) -> str:
        lines = [f"{self.header}:"]
        lines.extend(f"  - {issue.render()}" for issue in self.issues)
        return "\n".join(lines)

    def as_details(self) -> dict[str, object]:
        """Machine-readable form used in the CLI's JSON error envelope."""
        return {
            "error": self.header,
            "path": str(self.path) if self.path is not None else None,
            "issues": [{"key": i.key, "message": i.message} for i in self.issues],
        }
