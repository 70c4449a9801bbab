"""A byte-count progress bar for uploads and downloads, on stderr.

Drawn with Rich only for a person at a terminal (rich mode, stderr a TTY); otherwise it is
silent and costs nothing (``--json`` and ``--plain`` output stay clean for programs).
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

from osmosis_cli.output import Mode, Output


class TransferProgress:
    def __init__(self, output: Output, description: str, total: int, *, done: int = 0) -> None:
        self._bar: Any = None
        self._task: Any = None
        if output.mode is not Mode.RICH:
            return
        try:
            if not output.stderr.isatty():
                return
        except (AttributeError, ValueError):
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(file=output.stderr or sys.stderr),
            transient=True,
        )
        self._task = self._bar.add_task(description, total=total, completed=done)

    def advance(self, count: int) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, count)

    def __enter__(self) -> TransferProgress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
