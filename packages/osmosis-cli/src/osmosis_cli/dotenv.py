"""``.env`` files: ``NAME=value`` lines, used for ``--env-file`` and ``--secrets-file``.

Supported: blank lines, ``#`` comments, an ``export`` prefix, single or double quotes, and a
trailing `` # comment`` after an unquoted value. Parse errors name the file and line but never
echo the line, because it may hold a secret.
"""

from __future__ import annotations

import os
from pathlib import Path

from osmosis_cli.errors import CLIError, CLIErrorCode

ENV_FILE_VAR = "OSMOSIS_ENV_FILE"


def parse_dotenv(text: str, *, origin: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise CLIError(
                CLIErrorCode.VALIDATION,
                f"{origin}:{number}: expected NAME=value (the value is not shown).",
                details={"file": origin, "line": number},
            )
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in {'"', "'"}:
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        values[key] = value
    return values


def read_dotenv(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"Cannot read env file {path}: {exc.strerror or exc}.",
            details={"file": str(path)},
        ) from None
    return parse_dotenv(text, origin=str(path))


def find_dotenv(start: Path) -> Path | None:
    """The nearest ``.env`` from ``start`` upwards, not above the enclosing git repository."""
    here = start.resolve()
    for folder in [here, *here.parents]:
        candidate = folder / ".env"
        if candidate.is_file():
            return candidate
        if (folder / ".git").exists():
            return None
    return None


def load_environment(explicit: str | None, *, cwd: Path | None = None) -> Path | None:
    """Load ``--env-file`` / ``$OSMOSIS_ENV_FILE`` / the nearest ``.env`` into ``os.environ``.

    Variables already set to a non-empty value in the process win over the file. Returns the
    file that was loaded, if any.
    """
    chosen = explicit or os.environ.get(ENV_FILE_VAR)
    path = Path(chosen).expanduser() if chosen else find_dotenv(cwd or Path.cwd())
    if path is None:
        return None
    for name, value in read_dotenv(path).items():
        if not os.environ.get(name):
            os.environ[name] = value
    return path
