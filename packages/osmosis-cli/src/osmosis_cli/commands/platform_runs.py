"""The platform run commands shared by ``osmosis eval`` and ``osmosis train``.

``platform_run_commands(kind)`` builds ``submit``, ``list``, ``info`` (``status`` is a hidden
alias), ``logs``, ``stop`` and, for eval runs, ``download``; ``eval.py`` and ``train.py`` register
them, so the two groups cannot drift apart. Each command is a thin shell over
:mod:`osmosis_cli.platform`; heavy imports happen inside it.
"""

# No `from __future__ import annotations`: the commands' annotations use the closure variables
# of their factory (e.g. the config folder in the help), so they must be evaluated right away.
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from osmosis_cli.commands.options import AllPages, PageLimit, PageOffset

Kind = Literal["eval", "training"]


@dataclass(frozen=True)
class RunCommand:
    name: str
    callback: Callable[..., Any]
    help: str
    hidden: bool = False


def register(app: typer.Typer, kind: Kind) -> None:
    """Add the platform run commands of ``kind`` to ``app``."""
    for command in platform_run_commands(kind):
        app.command(command.name, help=command.help, hidden=command.hidden)(command.callback)


def platform_run_commands(kind: Kind) -> list[RunCommand]:
    what = "eval" if kind == "eval" else "training"
    group = "eval" if kind == "eval" else "train"
    a = "an" if kind == "eval" else "a"
    commands = [
        RunCommand(
            "submit",
            _submit(kind),
            f"Start {a} {what} run on the platform (preflight, secrets, summary, confirm, submit).",
        ),
        RunCommand("list", _list(kind), f"List {what} runs on the platform."),
        RunCommand("info", _info(kind), f"Show one {what} run (-o: write it to a JSON file)."),
        RunCommand("status", _info(kind), f"Same as '{group} info'.", hidden=True),
        RunCommand("logs", _logs(kind), f"Print {a} {what} run's log (--follow: until it ends)."),
        RunCommand("stop", _stop(kind), f"Stop a running {what} run."),
    ]
    if kind == "eval":
        commands.append(
            RunCommand("download", _download(kind), "Download an eval run's metrics and files.")
        )
        commands.append(
            RunCommand("retry", _retry, "Re-run a finished eval run's failed and skipped samples.")
        )
    return commands


RunArg = Annotated[str, typer.Argument(help="Run id or name.", metavar="NAME")]


def _submit(kind: Kind) -> Callable[..., None]:
    folder = "eval" if kind == "eval" else "training"

    def submit_command(
        config: Annotated[Path, typer.Argument(help=f"configs/{folder}/<name>.toml")],
        yes: Annotated[bool, typer.Option("--yes", "-y", help="Submit without asking.")] = False,
        secrets_file: Annotated[
            str | None,
            typer.Option(
                "--secrets-file", help="NAME=value lines with secret values ('-': stdin)."
            ),
        ] = None,
        name: Annotated[str | None, typer.Option("--name", help="Name of the run.")] = None,
    ) -> None:
        from osmosis_cli.output import get_output
        from osmosis_cli.platform.runs import SubmitOptions, submit

        submit(
            SubmitOptions(config, kind, yes=yes, secrets_file=secrets_file, name=name),
            get_output(),
        )

    return submit_command


def _list(kind: Kind) -> Callable[..., None]:
    def list_command(
        limit: PageLimit = 50,
        offset: PageOffset = 0,
        all_pages: AllPages = False,
    ) -> None:
        from osmosis_cli.output import get_output
        from osmosis_cli.platform.run_ops import list_runs

        list_runs(kind, get_output(), limit=limit, offset=offset, all_pages=all_pages)

    return list_command


def _info(kind: Kind) -> Callable[..., None]:
    def info_command(
        run: RunArg,
        out: Annotated[
            Path | None, typer.Option("--output", "-o", help="Write the run as JSON to this file.")
        ] = None,
        overwrite: Annotated[
            bool, typer.Option("--overwrite", help="Replace an existing --output file.")
        ] = False,
    ) -> None:
        from osmosis_cli.output import get_output
        from osmosis_cli.platform.run_ops import show_run

        show_run(kind, run, get_output(), out=out, overwrite=overwrite)

    def train_info_command(
        run: RunArg,
        out: Annotated[
            Path | None, typer.Option("--output", "-o", help="Write the run as JSON to this file.")
        ] = None,
        html_out: Annotated[
            Path | None,
            typer.Option("--html", help="Write the metric trends and checkpoints as a web page."),
        ] = None,
        overwrite: Annotated[
            bool, typer.Option("--overwrite", help="Replace an existing --output/--html file.")
        ] = False,
    ) -> None:
        from osmosis_cli.output import get_output

        if out is not None:
            from osmosis_cli.platform.run_ops import show_run

            show_run(kind, run, get_output(), out=out, overwrite=overwrite)
            return
        from osmosis_cli.platform.training_view import show_training_run

        show_training_run(run, get_output(), html_out=html_out, overwrite=overwrite)

    return train_info_command if kind == "training" else info_command


def _logs(kind: Kind) -> Callable[..., None]:
    def logs_command(
        run: RunArg,
        follow: Annotated[
            bool, typer.Option("--follow", "-f", help="Keep printing new lines until the run ends.")
        ] = False,
        limit: Annotated[
            int, typer.Option("--limit", min=1, max=200, help="Lines per request.")
        ] = 200,
        cursor: Annotated[
            str | None, typer.Option("--cursor", help="Start after this cursor (from --json).")
        ] = None,
    ) -> None:
        from osmosis_cli.output import get_output
        from osmosis_cli.platform.run_logs import show_logs

        show_logs(kind, run, get_output(), limit=limit, cursor=cursor, follow=follow)

    return logs_command


def _stop(kind: Kind) -> Callable[..., None]:
    def stop_command(
        run: RunArg,
        yes: Annotated[bool, typer.Option("--yes", "-y", help="Stop without asking.")] = False,
    ) -> None:
        from osmosis_cli.output import get_output
        from osmosis_cli.platform.run_ops import stop_run

        stop_run(kind, run, get_output(), yes=yes)

    return stop_command


def _download(kind: Kind) -> Callable[..., None]:
    def download_command(
        run: RunArg,
        output_dir: Annotated[
            Path | None,
            typer.Option("--output", "-o", help="Folder to write into (default: ./<run name>)."),
        ] = None,
        types: Annotated[
            str,
            typer.Option(
                "--type", help="Comma-separated: metrics, trajectories, artifacts, logs, or all."
            ),
        ] = "metrics,trajectories",
        rows: Annotated[
            str | None,
            typer.Option("--rows", help="Only these rows' files, 0-based: '0-9' or '3,7,10-20'."),
        ] = None,
        overwrite: Annotated[
            bool, typer.Option("--overwrite", help="Replace local files that differ.")
        ] = False,
        yes: Annotated[
            bool, typer.Option("--yes", "-y", help="Do not ask before large downloads.")
        ] = False,
    ) -> None:
        from osmosis_cli.output import get_output
        from osmosis_cli.platform.run_download import DownloadOptions, download_run

        options = DownloadOptions(run, output_dir, types, rows, overwrite=overwrite, yes=yes)
        download_run(kind, options, get_output())

    return download_command


def _retry(
    run: RunArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Retry without asking.")] = False,
    secrets_file: Annotated[
        str | None,
        typer.Option(
            "--secrets-file",
            help="NAME=value lines for the run's own secrets ('-' reads stdin).",
        ),
    ] = None,
) -> None:
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.run_ops import retry_eval_run

    retry_eval_run(run, get_output(), yes=yes, secrets_file=secrets_file)
