"""``logs.txt``: the controller's log of a run, with every known secret redacted.

Line format: ``<ISO time> <LEVEL> [<step>] <message> <canonical JSON details>``.

Why a dedicated writer rather than ``logging``: the set of secrets (the upstream API key, the
per-rollout proxy tokens, secret env values) is known only to the run, and every line must
pass through the redactor (:mod:`osmosis_ai._util.redaction`, the one rule) before it reaches
disk; the file is created with mode 0600.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from osmosis_ai._util.redaction import MARK as REDACTED
from osmosis_ai._util.redaction import Redactor

__all__ = ["REDACTED", "Redactor", "RunLog"]


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
