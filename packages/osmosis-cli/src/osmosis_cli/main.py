"""Entry point of the ``osmosis`` console script: global flags, dispatch, errors, exit codes.

Exit codes: 0 success, 1 failure (any :class:`~osmosis_cli.errors.CLIError` or unexpected
exception; also a partial result), 2 usage error, 3 ``eval run`` stopped by its ``--max-cost``
budget, 130 interrupted (Ctrl-C).

``--json``, ``--plain`` and ``--version`` are global and position independent: they are taken
out of argv before Click parses it, so ``osmosis template list --json`` works like
``osmosis --json template list``. ``osmosis``, ``osmosis --help`` and ``osmosis --version`` are
answered without importing Typer (see :mod:`osmosis_cli.fast_help`).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported at run time: `osmosis --help` stays cheap
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

GLOBAL_FLAGS = {"--json", "--plain", "--version", "-V"}
VALUE_FLAGS = ("--platform", "--env-file", "--workspace")
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class UsageProblem(ValueError):
    """A global flag is malformed (exit code 2)."""


def split_global_flags(argv: Sequence[str]) -> tuple[set[str], dict[str, str], list[str]]:
    """Remove the global flags from ``argv`` (anywhere before a literal ``--``).

    Returns the boolean flags, the valued ones (``--platform URL``, ``--env-file PATH``,
    ``--workspace NAME``, also written ``--platform=URL``) and the remaining arguments.
    """
    flags: set[str] = set()
    values: dict[str, str] = {}
    rest: list[str] = []
    passthrough = False
    items = iter(argv)
    for arg in items:
        if not passthrough and arg == "--":
            passthrough = True
        if passthrough:
            rest.append(arg)
            continue
        name, equals, inline = arg.partition("=")
        if arg in GLOBAL_FLAGS:
            flags.add("--version" if arg == "-V" else arg)
        elif name in VALUE_FLAGS:
            value = inline if equals else next(items, None)
            if not value or (not equals and value.startswith("-")):
                raise UsageProblem(f"{name} needs a value, e.g. {name} {_EXAMPLES[name]}")
            values[name] = value
        else:
            rest.append(arg)
    return flags, values, rest


_EXAMPLES = {
    "--platform": "https://platform.osmosis.ai",
    "--env-file": ".env",
    "--workspace": "research",
}


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script target: runs the CLI and exits with its code."""
    sys.exit(run(sys.argv[1:] if argv is None else argv))


def run(argv: Sequence[str], *, app: Any = None, prog_name: str = "osmosis") -> int:
    """Run one CLI invocation and return its exit code (never raises, except SystemExit).

    ``app`` is a root built by :func:`osmosis_ai.cli.main.create_app` (default: the
    ``osmosis`` root); ``prog_name`` names it in usage lines."""
    instruction = os.environ.get("_OSMOSIS_COMPLETE")
    if instruction:  # a shell asking for completions (see osmosis_cli.completion)
        from osmosis_cli.completion import complete

        return complete(instruction)
    try:
        flags, values, args = split_global_flags(argv)
    except UsageProblem as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return EXIT_USAGE
    if "--json" in flags and "--plain" in flags:
        sys.stderr.write("Error: --json and --plain cannot be used together.\n")
        return EXIT_USAGE
    if app is not None and "--version" in flags:
        from osmosis_cli.composition import version_callback_of

        custom = version_callback_of(app)
        if custom is not None:
            custom()
            return EXIT_OK
    # The fast paths come before importing anything else (see the module docstring).
    if app is None and "--version" in flags and "--json" not in flags:
        from osmosis_cli.fast_help import render_version

        sys.stdout.write(render_version())
        return EXIT_OK
    if app is None and "--version" not in flags and (not args or args in (["--help"], ["-h"])):
        from osmosis_cli.fast_help import render_root_help

        sys.stdout.write(render_root_help())
        return EXIT_OK

    from osmosis_cli.output import Mode, Output, set_output

    mode = Mode.JSON if "--json" in flags else Mode.PLAIN if "--plain" in flags else Mode.RICH
    output = set_output(Output(mode=mode))
    if "--version" in flags:
        from osmosis_cli.fast_help import version_details

        output.emit_detail(version_details())
        return EXIT_OK
    from osmosis_cli.dotenv import load_environment
    from osmosis_cli.errors import CLIError

    try:
        load_environment(values.get("--env-file"))
    except CLIError as error:
        output.error(error)
        return error.exit_code
    if "--platform" in values:
        os.environ["OSMOSIS_PLATFORM_URL"] = values["--platform"]
    if "--workspace" in values:
        name = values["--workspace"].strip()
        if not name:
            sys.stderr.write(
                "Error: --workspace needs a workspace name, e.g. --workspace research\n"
            )
            return EXIT_USAGE
        os.environ["OSMOSIS_WORKSPACE"] = name
    if args and args[0] in ("--show-completion", "--install-completion"):
        from osmosis_cli.completion import run_flag

        try:
            return run_flag(args[0], args[1:])
        except CLIError as error:
            output.error(error)
            return error.exit_code
    return _dispatch(args, output, app, prog_name)


def _dispatch(args: list[str], output: Any, app: Any, prog_name: str) -> int:
    from typer import _click
    from typer.exceptions import Abort, Exit

    from osmosis_cli.errors import CLIError, CLIErrorCode

    try:
        if app is None:
            from osmosis_cli.cli_app import build_root

            root = build_root()
        else:
            from osmosis_cli.composition import root_command

            root = root_command(app)
    except CLIError as error:
        output.error(error)
        return error.exit_code
    output.command = _command_path(root, args)
    try:
        result = root.main(args, prog_name=prog_name, standalone_mode=False)
    except CLIError as error:
        output.error(error)
        return error.exit_code
    except _click.exceptions.NoArgsIsHelpError as exc:  # `osmosis template`: show its help
        if exc.ctx is not None:
            sys.stdout.write(exc.ctx.get_help() + "\n")
        return EXIT_OK
    except _click.exceptions.UsageError as exc:
        if output.is_json:
            output.error(
                CLIError(
                    CLIErrorCode.VALIDATION,
                    exc.format_message(),
                    details={"usage": exc.ctx.get_usage() if exc.ctx else None},
                )
            )
        else:
            exc.show()
        return EXIT_USAGE
    except _click.exceptions.ClickException as exc:
        output.error(CLIError(CLIErrorCode.VALIDATION, exc.format_message()))
        return exc.exit_code
    except (KeyboardInterrupt, Abort):
        sys.stderr.write("\nInterrupted.\n")
        return EXIT_INTERRUPTED
    except Exit as exc:
        return exc.exit_code
    except Exception as exc:
        if os.environ.get("OSMOSIS_DEBUG") == "1":
            import traceback

            traceback.print_exc()
        # Only the type: an exception's text can carry data (URLs, tokens) not meant for logs.
        output.error(
            CLIError(
                CLIErrorCode.INTERNAL,
                f"An unexpected internal error occurred ({type(exc).__name__}). Re-run with "
                "OSMOSIS_DEBUG=1 to see the traceback.",
                details={"exception_type": type(exc).__name__},
            )
        )
        return EXIT_FAILURE
    if isinstance(result, int) and not isinstance(result, bool):
        return result
    return EXIT_OK


def _command_path(root: Any, args: list[str]) -> str:
    """``"template apply"`` for ``["template", "apply", "x"]`` (used in error envelopes)."""
    path: list[str] = []
    command = root
    for token in args:
        if token.startswith("-") or not hasattr(command, "get_command"):
            break
        try:
            sub = command.get_command(None, token)
        except Exception:  # a broken command module must not hide the real error
            break
        if sub is None:
            break
        path.append(token)
        command = sub
    return " ".join(path)
