"""``osmosis eval``: local runs (``eval run``, owned by the local-eval module) and platform runs
(``submit``, ``list``, ``info``, ``logs``, ``stop``, ``download``: see
:mod:`osmosis_cli.commands.platform_runs`)."""

from __future__ import annotations

from osmosis_cli.cli_app import LazyCommand, new_typer
from osmosis_cli.commands.platform_runs import register

app = new_typer("eval", help="Evaluate rollouts locally or on the platform.")

# `eval run` lives in its own module (a large command with its own dependencies); it is
# imported only when `eval run` is invoked or `osmosis eval --help` lists it.
LAZY_SUBCOMMANDS: dict[str, LazyCommand] = {}
try:
    from importlib.util import find_spec

    if find_spec("osmosis_cli.commands.eval_run") is not None:
        LAZY_SUBCOMMANDS["run"] = LazyCommand(
            "osmosis_cli.commands.eval_run",
            "run",
            "Run an eval locally against any OpenAI-compatible model.",
        )
    if find_spec("osmosis_cli.commands.eval_rubric") is not None:
        LAZY_SUBCOMMANDS["rubric"] = LazyCommand(
            "osmosis_cli.commands.eval_rubric",
            "rubric",
            "Grade conversations against a rubric with an LLM judge.",
        )
except ImportError:  # pragma: no cover - find_spec on a broken package
    pass


register(app, "eval")
