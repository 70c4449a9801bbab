"""The top-level command table, as plain data.

It is read by two consumers: :mod:`osmosis_cli.cli_app` (which imports a command's module only
when that command runs) and :mod:`osmosis_cli.fast_help` (which prints ``osmosis --help``
without importing Typer at all). Keeping it free of imports is what makes both fast.
"""

from __future__ import annotations


class CommandSpec:
    """One top-level command (a plain class: ``dataclasses`` would cost start-up time)."""

    __slots__ = ("help", "module", "name")

    def __init__(self, name: str, module: str, help: str) -> None:
        self.name = name
        self.module = module  # exposes ``app`` (a typer.Typer)
        self.help = help


COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("quickstart", "osmosis_cli.commands.quickstart", "Sign in, clone, get started."),
    CommandSpec("init", "osmosis_cli.commands.init", "Create an osmosis workspace."),
    CommandSpec("template", "osmosis_cli.commands.template", "List and apply rollout templates."),
    CommandSpec(
        "rollout",
        "osmosis_cli.commands.rollout",
        "Scaffold, validate, serve and list rollouts.",
    ),
    CommandSpec(
        "eval",
        "osmosis_cli.commands.eval",
        "Evaluate rollouts locally or on the platform.",
    ),
    CommandSpec(
        "env",
        "osmosis_cli.commands.env",
        "List and inspect environments from other ecosystems.",
    ),
    CommandSpec("train", "osmosis_cli.commands.train", "Submit and follow training runs."),
    CommandSpec(
        "benchmark",
        "osmosis_cli.commands.benchmark",
        "Run benchmarks locally or on the platform.",
    ),
    CommandSpec("dataset", "osmosis_cli.commands.dataset", "Upload and manage platform datasets."),
    CommandSpec("model", "osmosis_cli.commands.model", "List models; deploy LoRA models."),
    CommandSpec("secret", "osmosis_cli.commands.secret", "Store secrets on the platform."),
    CommandSpec("auth", "osmosis_cli.commands.auth", "Log in to the platform."),
    CommandSpec(
        "skills", "osmosis_cli.commands.skills", "List and update the workspace's agent skills."
    ),
    CommandSpec("doctor", "osmosis_cli.commands.doctor", "Check the workspace and environment."),
    CommandSpec("upgrade", "osmosis_cli.commands.upgrade", "Upgrade the CLI (uv tool, pipx, pip)."),
)

ROOT_HELP = "osmosis: define, run, evaluate and serve agent rollouts."

#: The root's options (label, help): printed by :mod:`osmosis_cli.fast_help` and declared on the
#: root group by :mod:`osmosis_cli.cli_app` (``-h`` and completion excepted, which Click and
#: :mod:`osmosis_cli.completion` declare); :mod:`osmosis_cli.main` takes them out of argv.
GLOBAL_OPTIONS: tuple[tuple[str, str], ...] = (
    ("--json", "Print one JSON envelope on stdout (errors on stderr)."),
    ("--plain", "Plain text without colour or tables."),
    ("--platform URL", "Platform base URL (overrides $OSMOSIS_PLATFORM_URL)."),
    ("--env-file PATH", "Load variables from PATH (default: the nearest .env)."),
    ("--workspace NAME", "Platform workspace for this command (overrides $OSMOSIS_WORKSPACE)."),
    ("-V, --version", "Show the version and exit."),
    ("--install-completion", "Install shell completion (optionally name a SHELL)."),
    ("--show-completion", "Print the completion script (optionally name a SHELL)."),
    ("-h, --help", "Show this message and exit."),
)
