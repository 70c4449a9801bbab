"""How commands talk to people and to programs.

Three modes, chosen once per process by the global flags:

* rich (default): colour and tables on a terminal; Rich is imported only when something is
  actually rendered, so ``--json`` and ``--plain`` runs never pay for it;
* ``--plain``: low-noise text without colour, one record per line (stable enough for ``grep``);
* ``--json``: exactly one envelope with ``schema_version: 1`` on stdout; warnings are JSON
  lines on stderr; errors are an envelope on stderr. Non-finite floats become ``null``.

Commands never print directly; they call :func:`get_output` and one of its ``emit_*`` methods.
Text that reaches a Rich console (a table cell, a message, a progress line) goes through
:func:`escape_markup` first: user text, hints such as ``pip install 'osmosis-ai[strands]'`` and
config hints such as ``[pricing."model"]`` would otherwise be eaten as markup.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TextIO

from osmosis_cli import __version__
from osmosis_cli.errors import CLIError, CLIErrorCode

SCHEMA_VERSION = 1


class Mode(StrEnum):
    RICH = "rich"
    PLAIN = "plain"
    JSON = "json"


def json_safe(value: Any) -> Any:
    """Replace non-finite floats by ``None`` (JSON has no NaN) and paths by strings."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, str | int | bool) or value is None:
        return value
    return str(value)


def dumps(payload: Mapping[str, Any]) -> str:
    return json.dumps(json_safe(payload), allow_nan=False, ensure_ascii=False)


@dataclass(slots=True)
class Column:
    """A column of a list's table (rich mode); ``render`` turns the item into the cell's text
    when the raw value is not what a person should read (JSON and plain keep the raw value)."""

    key: str
    header: str
    render: Callable[[Mapping[str, Any]], Any] | None = None


def _shown(key: str, value: Any) -> Any:
    """What a person reads for field ``key``: ``*_at`` fields are timestamps, in local time."""
    return local_time(value) if key.endswith("_at") else value


def local_time(value: Any) -> Any:
    """``2026-12-03T15:41:21.426718+00:00`` → ``2026-12-03 15:41:21`` in the local time zone;
    anything that is not such a timestamp is returned as it is."""
    if not isinstance(value, str):
        return value
    from datetime import datetime

    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    if moment.tzinfo is not None:
        moment = moment.astimezone()
    return moment.strftime("%Y-%m-%d %H:%M:%S")


@dataclass
class Output:
    """Renders command results in the selected mode."""

    mode: Mode = Mode.RICH
    command: str = ""
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)

    # -- helpers -------------------------------------------------------------------------
    @property
    def is_json(self) -> bool:
        return self.mode is Mode.JSON

    @property
    def interactive(self) -> bool:
        """Prompts are allowed only for humans on a real terminal."""
        if self.mode is not Mode.RICH:
            return False
        try:
            return sys.stdin.isatty() and self.stdout.isatty()
        except (AttributeError, ValueError):
            return False

    def _console(self, stderr: bool = False) -> Any:
        return make_console(self.stderr if stderr else self.stdout)

    def _print(self, text: str, *, stderr: bool = False) -> None:
        stream = self.stderr if stderr else self.stdout
        stream.write(text + "\n")
        stream.flush()

    # -- success envelopes ---------------------------------------------------------------
    def emit_list(
        self,
        items: Sequence[Mapping[str, Any]],
        *,
        columns: Sequence[Column],
        plain: Callable[[Mapping[str, Any]], str],
        title: str | None = None,
        empty: str = "Nothing to show.",
        total_count: int | None = None,
        next_offset: int | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """A list envelope; ``next_offset`` is set when more items exist (pagination).

        ``extra`` adds keys to the JSON envelope (e.g. ``next_cursor`` for cursor pagination).
        """
        if self.is_json:
            self._print(
                dumps(
                    {
                        "schema_version": SCHEMA_VERSION,
                        "items": list(items),
                        "total_count": len(items) if total_count is None else total_count,
                        "has_more": next_offset is not None,
                        "next_offset": next_offset,
                        **(extra or {}),
                    }
                )
            )
            return
        if self.mode is Mode.PLAIN:
            for item in items:
                self._print(plain(item))
            return
        if not items:
            self._print(empty)
            return
        from rich.table import Table

        table = Table(title=title, show_edge=False, header_style="bold")
        for column in columns:
            table.add_column(column.header)
        for item in items:
            table.add_row(
                *(
                    escape_markup(
                        _cell(c.render(item) if c.render else _shown(c.key, item.get(c.key)))
                    )
                    for c in columns
                )
            )
        self._console().print(table)

    def emit_detail(self, data: Mapping[str, Any], *, title: str | None = None) -> None:
        if self.is_json:
            self._print(dumps({"schema_version": SCHEMA_VERSION, "data": dict(data)}))
            return
        if self.mode is Mode.PLAIN:
            for key, value in data.items():
                self._print(f"{key}: {_cell(value)}")
            return
        from rich.table import Table

        table = Table(title=title, show_header=False, show_edge=False)
        table.add_column(style="bold")
        table.add_column()
        for key, value in data.items():
            table.add_row(escape_markup(str(key)), escape_markup(_cell(_shown(str(key), value))))
        self._console().print(table)

    def emit_operation(
        self,
        operation: str,
        *,
        status: str = "success",
        message: str | None = None,
        resource: Mapping[str, Any] | None = None,
        next_steps: Sequence[str] = (),
        lines: Sequence[str] = (),
        ok: bool | None = None,
    ) -> None:
        """Result of a command that changed something (``template.apply``, ``eval.submit``...).

        ``lines`` are extra human-only details (e.g. the files written); JSON carries them in
        ``resource`` instead. ``ok``: whether the human output marks the result with a ✓
        (default: ``status == "success"``; an eval in which nothing passed is not ✓).
        """
        if self.is_json:
            payload: dict[str, Any] = {
                "schema_version": SCHEMA_VERSION,
                "status": status,
                "operation": operation,
            }
            if resource is not None:
                payload["resource"] = dict(resource)
            if message is not None:
                payload["message"] = message
            if next_steps:
                payload["next_steps_structured"] = [{"command": s} for s in next_steps]
            self._print(dumps(payload))
            return
        rich = self.mode is not Mode.PLAIN
        emit = self._console().print if rich else self._print
        for text in _operation_text(
            status if ok is None else ("success" if ok else "warning"),
            message,
            lines,
            next_steps,
            rich=rich,
        ):
            emit(text)

    def emit_event(self, payload: Mapping[str, Any], text: str) -> None:
        """One record of a streaming command (``logs --follow``): a JSON line in ``--json``
        mode (``schema_version`` added), else ``text``. Flushed at once."""
        if self.is_json:
            self._print(dumps({"schema_version": SCHEMA_VERSION, **payload}))
        else:
            self._print(text)

    def emit_message(self, message: str) -> None:
        if self.is_json:
            self._print(dumps({"schema_version": SCHEMA_VERSION, "message": message}))
        else:
            self._print(message)

    # -- side channel (stderr) -----------------------------------------------------------
    def warn(self, code: str, message: str, **details: Any) -> None:
        if self.is_json:
            warning: dict[str, Any] = {"code": code, "message": message}
            if details:
                warning["details"] = details
            self._print(
                dumps(
                    {
                        "schema_version": SCHEMA_VERSION,
                        "cli_version": __version__,
                        "warning": warning,
                    }
                ),
                stderr=True,
            )
        elif self.mode is Mode.PLAIN:
            self._print(f"Warning: {message}", stderr=True)
        else:
            self._console(stderr=True).print(f"[yellow]Warning:[/yellow] {escape_markup(message)}")

    def progress(self, message: str) -> None:
        """A human-only milestone on stderr (silent in JSON mode)."""
        if self.is_json:
            return
        if self.mode is Mode.PLAIN:
            self._print(message, stderr=True)
        else:
            self._console(stderr=True).print(f"[dim]{escape_markup(message)}[/dim]")

    def error(self, error: CLIError) -> None:
        if self.is_json:
            self._print(
                dumps(
                    {
                        "schema_version": SCHEMA_VERSION,
                        "command": self.command,
                        "cli_version": __version__,
                        "error": {
                            "code": str(error.code),
                            "message": error.message,
                            "details": error.details,
                        },
                    }
                ),
                stderr=True,
            )
        elif self.mode is Mode.PLAIN or not _stderr_is_tty(self.stderr):
            self._print(f"Error: {error.message}", stderr=True)
        else:
            self._console(stderr=True).print(
                f"[bold red]Error:[/bold red] {escape_markup(error.message)}"
            )

    # -- interaction ----------------------------------------------------------------------
    def confirm(self, question: str, *, assume_yes: bool) -> bool:
        """Ask a yes/no question; never prompts in ``--json``/``--plain`` or without a TTY."""
        if assume_yes:
            return True
        if not self.interactive:
            raise CLIError(
                CLIErrorCode.INTERACTIVE_REQUIRED,
                "Confirmation needed but this session is not interactive. "
                "Use --yes to confirm in non-interactive mode.",
                details={"flags": ["--yes"]},
            )
        from rich.prompt import Confirm

        return bool(Confirm.ask(question, default=False, console=self._console(stderr=True)))

    def ask(
        self, question: str, *, choices: Sequence[str] | None = None, default: str | None = None
    ) -> str:
        """Ask for a line of text (one of ``choices`` when given); only on a terminal."""
        if not self.interactive:
            raise CLIError(
                CLIErrorCode.INTERACTIVE_REQUIRED,
                f"An answer is needed ({question}) but this session is not interactive.",
            )
        from rich.prompt import Prompt

        answer = Prompt.ask(
            question,
            choices=list(choices) if choices else None,
            default=default,
            console=self._console(stderr=True),
        )
        return answer or ""

    def prompt_secret(self, name: str) -> str:
        import getpass

        return getpass.getpass(f"{name}: ")


def _stderr_is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty() and not os.environ.get("NO_COLOR")
    except (AttributeError, ValueError):
        return False


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return human_number(value)
    if isinstance(value, list | tuple):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_cell(v)}" for k, v in value.items())
    return str(value)


def human_number(value: float) -> str:
    """A float as a person reads it (JSON keeps full precision): at most 4 decimals (1 from
    100 up), trailing zeros dropped; ``5.551115123125783e-17`` reads ``0``,
    ``0.8333333333333334`` ``0.8333`` and ``367.928`` ``367.9``."""
    import math

    if not math.isfinite(value):
        return str(value)
    text = f"{value:.1f}" if abs(value) >= 100 else f"{value:.4f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("-0", "") else text


def escape_markup(text: str) -> str:
    """``text`` as a Rich console shows it literally: the one escape for everything printed in
    rich mode (Rich's own rule, which also handles a backslash before a bracket)."""
    from rich.markup import escape

    return escape(text)


def _operation_text(
    status: str, message: str | None, lines: Sequence[str], next_steps: Sequence[str], *, rich: bool
) -> list[str]:
    """The human lines of :meth:`Output.emit_operation`: Rich markup, or plain text."""
    text = escape_markup if rich else str
    out: list[str] = []
    if message:
        mark = "[green]✓[/green] " if status == "success" else "[yellow]![/yellow] "
        out.append(f"{mark if rich else ''}{text(message)}")
    out.extend(f"  {text(line)}" for line in lines)
    if next_steps:
        out.append("\n[bold]Next steps[/bold]" if rich else "Next steps:")
        out.extend(f"  [cyan]{text(step)}[/cyan]" if rich else f"  {step}" for step in next_steps)
    return out


_current = Output()


def get_output() -> Output:
    """The process-wide output, configured by :mod:`osmosis_cli.main` from the global flags."""
    return _current


def set_output(output: Output) -> Output:
    global _current
    _current = output
    return output


#: Width for Rich output that is not going to a terminal (CI logs, pipes, files): wide enough
#: that paths and commands are never wrapped, as Rich would otherwise wrap at 80 columns.
_UNBOUNDED_WIDTH = 10_000


def make_console(file: Any) -> Any:
    """A Rich console on ``file``: the terminal's width on a terminal, else no wrapping at all."""
    import os

    from rich.console import Console

    is_terminal = bool(getattr(file, "isatty", lambda: False)())
    width = None if is_terminal or os.environ.get("COLUMNS") else _UNBOUNDED_WIDTH
    return Console(file=file, highlight=False, width=width, soft_wrap=not is_terminal)
