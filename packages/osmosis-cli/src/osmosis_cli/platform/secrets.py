"""Secret values a run needs (``[secrets] required = [...]``): from a file, the environment, or a
prompt. Values are only ever sent to the platform; they are never printed or written."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from osmosis_cli.dotenv import parse_dotenv, read_dotenv
from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Output


@dataclass
class ResolvedSecrets:
    values: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # name -> "file" | "env" | "prompt"

    def __repr__(self) -> str:
        return f"ResolvedSecrets(sources={self.sources!r})"


def read_secrets_file(path: str) -> dict[str, str]:
    if path == "-":
        return parse_dotenv(sys.stdin.read(), origin="<stdin>")
    return read_dotenv(Path(path).expanduser())


def resolve_secrets(
    names: Sequence[str], *, secrets_file: str | None, output: Output
) -> ResolvedSecrets:
    resolved = ResolvedSecrets()
    from_file = read_secrets_file(secrets_file) if secrets_file else {}
    missing: list[str] = []
    for name in names:
        if from_file.get(name):
            resolved.values[name], resolved.sources[name] = from_file[name], "file"
        elif os.environ.get(name):
            resolved.values[name], resolved.sources[name] = os.environ[name], "env"
        else:
            missing.append(name)
    if missing and not output.interactive:
        raise CLIError(
            CLIErrorCode.INTERACTIVE_REQUIRED,
            f"Missing secret(s): {', '.join(missing)}. Provide them with --secrets-file PATH "
            "(NAME=value lines, '-' for stdin) or as environment variables; this session is "
            "not interactive, so they cannot be asked for.",
            details={"missing": missing, "flags": ["--secrets-file"]},
        )
    for name in missing:
        value = output.prompt_secret(name)
        if not value:
            raise CLIError(
                CLIErrorCode.VALIDATION,
                f"No value entered for secret {name}.",
                details={"missing": [name]},
            )
        resolved.values[name], resolved.sources[name] = value, "prompt"
    return resolved
