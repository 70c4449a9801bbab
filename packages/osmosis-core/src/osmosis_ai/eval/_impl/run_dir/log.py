"""``logs.txt``: the controller's log of a run, with every known secret redacted.

Line format: ``<ISO time> <LEVEL> [<step>] <message> <canonical JSON details>``.

Why a dedicated writer rather than ``logging``: the set of secrets (the upstream API key, the
per-rollout proxy tokens, secret env values) is known only to the run, and every line must
pass through the redactor before it reaches disk; the file is created with mode 0600. Secrets
are replaced longest first, so a secret that contains another is never half-revealed.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REDACTED = "***"
_MIN_SECRET_LEN = 4  # shorter strings would redact ordinary words


class Redactor:
    """Replaces registered secret strings in text."""

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._ordered: list[str] = []

    def add(self, secret: str | None) -> None:
        if secret and len(secret) >= _MIN_SECRET_LEN and secret not in self._secrets:
            self._secrets.add(secret)
            self._ordered = sorted(self._secrets, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._ordered:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text


class RunLog:
    """Thread-safe, line-buffered, redacting log file."""

    def __init__(self, path: Path, redactor: Redactor) -> None:
        self.path = path
        self.redact = redactor
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.chmod(path, 0o600)
        self._fh = os.fdopen(fd, "a", encoding="utf-8", buffering=1)
        self._lock = threading.Lock()

    def log(self, level: str, step: str, message: str, **details: Any) -> None:
        line = f"{datetime.now(UTC).isoformat()} {level.upper()} [{step}] {message}"
        if details:
            line += " " + json.dumps(details, sort_keys=True, separators=(",", ":"), default=str)
        line = self.redact(line.replace("\n", "\\n"))
        with self._lock:
            if not self._fh.closed:
                try:
                    self._fh.write(line + "\n")
                except OSError as exc:  # a full disk: say which file
                    raise OSError(exc.errno, exc.strerror, str(self.path)) from exc

    def info(self, step: str, message: str, **details: Any) -> None:
        self.log("INFO", step, message, **details)

    def warning(self, step: str, message: str, **details: Any) -> None:
        self.log("WARNING", step, message, **details)

    def error(self, step: str, message: str, **details: Any) -> None:
        self.log("ERROR", step, message, **details)

    def close(self) -> None:
        with self._lock, contextlib.suppress(OSError):  # a line lost to a full disk
            self._fh.close()
