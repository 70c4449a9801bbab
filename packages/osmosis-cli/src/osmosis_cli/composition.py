"""Build on the ``osmosis`` CLI: a fresh root with every osmosis command, extensible with
your own Typer commands, run with the same output modes, envelopes and exit codes.

Public as :func:`osmosis_ai.cli.main.create_app` and :func:`osmosis_ai.cli.main.run_cli`, the
names osmosis-ai 0.3.8 gave them::

    from osmosis_ai.cli.main import create_app, run_cli

    app = create_app(name="acme")

    @app.command()
    def hello() -> None:
        print("hello")

    raise SystemExit(run_cli(app))

The osmosis commands stay lazy (a command's module is imported when it runs), so a composed
CLI starts as fast as ``osmosis`` does. A name used twice (yours and an osmosis command, or two
of yours, at any level) is refused before any handler runs: ``Duplicate CLI command: NAME``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import typer
from typer import _click

from osmosis_cli.cli_app import LazyCommand, LazyGroup, new_typer
from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.registry import COMMANDS, ROOT_HELP

_VERSION_CALLBACKS: weakref.WeakKeyDictionary[typer.Typer, Callable[[], None]] = (
    weakref.WeakKeyDictionary()
)


class _ComposedRoot(LazyGroup):
    """The root group of a composed CLI: the osmosis commands (lazy) plus the app's own."""

    omit: frozenset[str] = frozenset()

    def __init__(self, **kwargs: Any) -> None:
        lazy = {
            spec.name: LazyCommand(spec.module, "app", spec.help)
            for spec in COMMANDS
            if spec.name not in self.omit
        }
        kwargs.setdefault("help", ROOT_HELP)
        super().__init__(lazy=lazy, **kwargs)


def create_app(
    *,
    name: str = "osmosis",
    version_callback: Callable[[], None] | None = None,
    upgrade_command: Callable[..., Any] | None = None,
) -> typer.Typer:
    """A new root holding every osmosis command, to which you add Typer commands or groups.

    ``version_callback`` answers ``--version`` (default: osmosis's version report);
    ``upgrade_command`` is registered as ``upgrade`` (for a distribution with its own release
    channel). Each call builds an independent root; the ``osmosis`` command is not modified.
    """
    omit = frozenset({"upgrade"}) if upgrade_command is not None else frozenset()
    root_cls = type("ComposedRoot", (_ComposedRoot,), {"omit": omit})
    app = new_typer(name, cls=root_cls)

    @app.callback()
    def _root() -> None:
        """The root takes no options of its own: the global flags are read before parsing."""

    if upgrade_command is not None:
        app.command("upgrade")(upgrade_command)
    if version_callback is not None:
        _VERSION_CALLBACKS[app] = version_callback
    return app


def version_callback_of(app: Any) -> Callable[[], None] | None:
    """The ``version_callback`` given to :func:`create_app` for ``app``, if any."""
    try:
        return _VERSION_CALLBACKS.get(app)
    except TypeError:
        return None


def root_command(app: typer.Typer) -> _click.Command:
    """``app`` as a Click command, refusing duplicate command names at any level."""
    command = typer.main.get_command(app)
    _check_duplicates(app, command, [app.info.name or "osmosis"])
    return command


def _check_duplicates(app: typer.Typer, command: _click.Command, path: list[str]) -> None:
    names: list[str] = []
    for info in app.registered_commands:
        names.append(info.name or _command_name(info.callback))
    for group in app.registered_groups:
        names.append(
            group.name or (group.typer_instance.info.name or "" if group.typer_instance else "")
        )
        if group.typer_instance is not None:
            sub = group.typer_instance
            _check_duplicates(sub, command, [*path, names[-1]])
    if isinstance(command, LazyGroup) and len(path) == 1:
        names.extend(command._lazy)  # the osmosis commands of a composed root
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise CLIError(
                CLIErrorCode.INTERNAL,
                f"Duplicate CLI command: {' '.join([*path[1:], name])}",
                details={"command": name},
            )
        seen.add(name)


def _command_name(callback: Callable[..., Any] | None) -> str:
    return (getattr(callback, "__name__", "") or "").replace("_", "-")


def run_cli(
    cli_app: typer.Typer, argv: Sequence[str] | None = None, *, prog_name: str | None = None
) -> int:
    """Run ``cli_app`` on ``argv`` (default: ``sys.argv[1:]``) as ``osmosis`` runs: global
    flags anywhere (``--json``, ``--plain``, ``--platform``, ``--env-file``, ``-V``), the same
    envelopes and exit codes. Returns the exit code."""
    import sys

    from osmosis_cli.main import run

    args = list(sys.argv[1:] if argv is None else argv)
    return run(args, app=cli_app, prog_name=prog_name or cli_app.info.name or "osmosis")
