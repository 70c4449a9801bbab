"""Shell completion: ``--show-completion [SHELL]``, ``--install-completion [SHELL]`` and the
completion protocol itself (``_OSMOSIS_COMPLETE=complete_bash`` etc.).

Why not Typer's ``add_completion=True``: the root group is built by :mod:`osmosis_cli.cli_app`
(lazy commands), and ``osmosis --help`` is answered without importing Typer at all
(:mod:`osmosis_cli.fast_help`). The options are declared on the root group here, and
:mod:`osmosis_cli.main` routes a completion request here before anything else is imported,
so neither costs ``osmosis --help`` anything. The scripts and the protocol are Typer's: a
script shows ``osmosis`` calling itself with ``_OSMOSIS_COMPLETE`` set.

The shell is the option's value, else detected from the parent process (``shellingham``);
naming it is the reliable way in scripts and CI.
"""

from __future__ import annotations

from typer import _click

PROG_NAME = "osmosis"
COMPLETE_VAR = "_OSMOSIS_COMPLETE"
SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")


COMPLETION_FLAGS = ("--show-completion", "--install-completion")


def completion_options() -> list[_click.Parameter]:
    """The two root options, for help and the CLI reference only: :mod:`osmosis_cli.main`
    answers them before Click parses anything (Click has no optional option values)."""
    from typer.core import TyperOption

    return [
        TyperOption(
            param_decls=["--install-completion"],
            metavar="[SHELL]",
            expose_value=False,
            help="Install shell completion (optionally name a SHELL).",
        ),
        TyperOption(
            param_decls=["--show-completion"],
            metavar="[SHELL]",
            expose_value=False,
            help="Print the completion script (optionally name a SHELL).",
        ),
    ]


def run_flag(flag: str, rest: list[str]) -> int:
    """``osmosis --show-completion [SHELL]`` / ``--install-completion [SHELL]``."""
    from osmosis_cli.errors import validation

    if len(rest) > 1:
        raise validation(f"{flag} takes at most one shell name, e.g. {flag} bash")
    shell = _shell(rest[0] if rest else "")
    if flag == "--show-completion":
        _click.echo(script(shell))
        return 0
    from typer._completion_classes import completion_init
    from typer._completion_shared import install

    completion_init()
    shell, path = install(shell=shell, prog_name=PROG_NAME, complete_var=COMPLETE_VAR)
    _click.echo(f"{shell} completion installed in {path}; restart your shell to use it.")
    return 0


def complete(instruction: str) -> int:
    """Answer one completion request (``complete_bash``, ``complete_zsh``...); the words
    typed so far come from the environment the shell script sets."""
    from typer._completion_classes import completion_init
    from typer.completion import shell_complete

    from osmosis_cli.cli_app import build_root

    completion_init()
    return shell_complete(build_root(), {}, PROG_NAME, COMPLETE_VAR, instruction)


def script(shell: str) -> str:
    from typer._completion_classes import completion_init
    from typer._completion_shared import get_completion_script

    completion_init()
    return get_completion_script(prog_name=PROG_NAME, complete_var=COMPLETE_VAR, shell=shell)


def _shell(value: str) -> str:
    from osmosis_cli.errors import validation

    if value and value not in SHELLS:
        raise validation(f"unsupported shell {value!r}; use one of {', '.join(SHELLS)}")
    if value:
        return value
    try:
        import shellingham

        detected = str(shellingham.detect_shell()[0]).lower()
    except Exception:  # ShellDetectionFailure, or no parent shell at all (CI)
        detected = ""
    if detected not in SHELLS:
        raise validation(
            "could not detect your shell; name it, e.g. osmosis --show-completion bash "
            f"(one of {', '.join(SHELLS)})"
        )
    return detected
