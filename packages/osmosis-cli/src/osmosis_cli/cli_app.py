"""Builds the Typer/Click command tree, loading each command module only when it is used.

``osmosis template list`` imports the template module and nothing else: the root group knows
the other commands only by name and one-line help (:mod:`osmosis_cli.registry`). Help is plain
Click formatting (``rich_markup_mode=None``) so that printing help never imports Rich.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

import typer
from typer import _click
from typer._click.shell_completion import CompletionItem
from typer.core import TyperGroup

from osmosis_cli.registry import COMMANDS, GLOBAL_OPTIONS, ROOT_HELP

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


def new_typer(name: str | None = None, *, help: str | None = None, **kwargs: Any) -> typer.Typer:
    """A Typer app with our conventions: plain help, no completion install, ``-h``."""
    return typer.Typer(
        name=name,
        help=help,
        rich_markup_mode=None,
        add_completion=False,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        context_settings=dict(CONTEXT_SETTINGS),
        **kwargs,
    )


@dataclass(frozen=True, slots=True)
class LazyCommand:
    """A command known by module path; ``attr`` is a Typer app or a Typer-style function."""

    module: str
    attr: str
    help: str

    def load(self, name: str) -> _click.Command:
        obj = getattr(importlib.import_module(self.module), self.attr)
        if isinstance(obj, typer.Typer):
            command = typer.main.get_command(obj)
        else:
            info = typer.models.CommandInfo(name=name, callback=obj)
            command = typer.main.get_command_from_info(
                info, pretty_exceptions_short=True, rich_markup_mode=None
            )
        command.name = name
        lazy: Mapping[str, LazyCommand] = getattr(
            importlib.import_module(self.module), "LAZY_SUBCOMMANDS", {}
        )
        if lazy and isinstance(command, TyperGroup):
            command = LazyGroup(
                name=name,
                commands=dict(command.commands),
                lazy=lazy,
                help=command.help,
                no_args_is_help=True,
                context_settings=dict(CONTEXT_SETTINGS),
            )
        return command


class LazyGroup(TyperGroup):
    """A group whose subcommands are imported the first time they are needed."""

    def __init__(self, *, lazy: Mapping[str, LazyCommand], **kwargs: Any) -> None:
        kwargs.setdefault("rich_markup_mode", None)
        kwargs.setdefault("suggest_commands", False)  # we suggest among lazy names too
        super().__init__(**kwargs)
        self._lazy = dict(lazy)

    def list_commands(self, ctx: _click.Context) -> list[str]:
        # Lazy commands first: the root lists the registry in its order, and `eval` puts `run`
        # (its main command) before the platform ones.
        names = list(self._lazy)
        names.extend(name for name in self.commands if name not in self._lazy)
        return names

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in self._lazy:
            command = self._lazy[cmd_name].load(cmd_name)
            self.commands[cmd_name] = command
        return command

    def shell_complete(self, ctx: _click.Context, incomplete: str) -> list[CompletionItem]:
        """Subcommand names with their help, without importing the lazy ones; then options."""
        results = [
            CompletionItem(name, help=self._short_help(name))
            for name in self.list_commands(ctx)
            if name.startswith(incomplete)
            and not (name in self.commands and self.commands[name].hidden)
        ]
        results.extend(_click.Command.shell_complete(self, ctx, incomplete))
        return results

    def _short_help(self, name: str) -> str:
        if name in self.commands:
            return self.commands[name].get_short_help_str()
        return self._lazy[name].help

    def format_commands(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.commands:
                command = self.commands[name]
                if command.hidden:
                    continue
                rows.append((name, command.get_short_help_str(formatter.width - 6 - len(name))))
            else:
                rows.append((name, self._lazy[name].help))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def resolve_command(
        self, ctx: _click.Context, args: list[str]
    ) -> tuple[str | None, _click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except _click.exceptions.UsageError as exc:
            if args and "No such command" in exc.message:
                matches = get_close_matches(args[0], self.list_commands(ctx), n=1, cutoff=0.5)
                if matches:
                    exc.message = f"No such command '{args[0]}'. Did you mean '{matches[0]}'?"
            raise


def _global_options() -> list[_click.Parameter]:
    """The root's options, from the table ``osmosis --help`` prints without Typer
    (:data:`~osmosis_cli.registry.GLOBAL_OPTIONS`, labels like ``-V, --version`` or
    ``--platform URL``). For help and the CLI reference only: :mod:`osmosis_cli.main` takes
    them out of argv before Click parses it, so that they work in any position. ``-h`` and the
    completion options are Click's and :mod:`osmosis_cli.completion`'s own."""
    from typer.core import TyperOption

    from osmosis_cli.completion import COMPLETION_FLAGS

    params: list[_click.Parameter] = []
    for label, text in GLOBAL_OPTIONS:
        words = label.replace(",", "").split()
        decls = [word for word in words if word.startswith("-")]
        if decls[-1] in ("--help", *COMPLETION_FLAGS):
            continue
        metavar = next((word for word in words if not word.startswith("-")), None)
        params.append(
            TyperOption(
                param_decls=decls,
                is_flag=metavar is None,
                metavar=metavar,
                expose_value=False,
                help=text,
            )
        )
    return params


def build_root(commands: Sequence[Any] = COMMANDS) -> LazyGroup:
    """The ``osmosis`` root group."""
    from osmosis_cli.completion import completion_options

    params = [*_global_options(), *completion_options()]
    return LazyGroup(
        name="osmosis",
        lazy={spec.name: LazyCommand(spec.module, "app", spec.help) for spec in commands},
        params=params,
        help=ROOT_HELP,
        no_args_is_help=True,
        context_settings=dict(CONTEXT_SETTINGS),
    )
