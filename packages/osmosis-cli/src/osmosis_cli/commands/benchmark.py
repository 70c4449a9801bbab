"""``osmosis benchmark list | info | submit | run`` and ``osmosis benchmark runs list | info |
logs | stop | download`` (platform benchmarks; ``run`` runs the same TOML locally)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from osmosis_cli.cli_app import new_typer
from osmosis_cli.commands.options import AllPages, PageLimit, PageOffset

app = new_typer("benchmark", help="Run benchmarks locally or on the platform; read leaderboards.")
runs_app = new_typer("runs", help="List, follow, stop and download platform benchmark runs.")
app.add_typer(runs_app, name="runs")

ConfigArg = Annotated[Path, typer.Argument(help="configs/benchmark/<name>.toml", metavar="CONFIG")]
RunArg = Annotated[str, typer.Argument(help="Benchmark run id or name.", metavar="NAME")]
SecretsFile = Annotated[
    str | None,
    typer.Option("--secrets-file", help="NAME=value lines with secret values ('-': stdin)."),
]


@app.command("list")
def list_command(
    limit: PageLimit = 50, offset: PageOffset = 0, all_pages: AllPages = False
) -> None:
    """List the benchmarks of the workspace."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.benchmarks import list_benchmarks

    list_benchmarks(get_output(), limit=limit, offset=offset, all_pages=all_pages)


@app.command("info")
def info_command(
    key: Annotated[str, typer.Argument(help="Benchmark key (osmosis benchmark list).")],
    limit: PageLimit = 20,
    all_pages: Annotated[bool, typer.Option("--all", help="Show all of its runs.")] = False,
) -> None:
    """Show a benchmark: task sets, leaderboard (pass@1 with 95 % CI, pass@k, ties), runs."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.benchmarks import show_benchmark

    show_benchmark(key, get_output(), limit=limit, all_pages=all_pages)


@app.command("submit")
def submit_command(
    config: ConfigArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Submit without asking.")] = False,
    secrets_file: SecretsFile = None,
) -> None:
    """Start a benchmark run on the platform (secrets, summary, confirm, submit)."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.benchmarks import submit

    submit(config, get_output(), yes=yes, secrets_file=secrets_file)


@app.command("run")
def run_command(
    config: ConfigArg,
    name: Annotated[str | None, typer.Option("--name", help="Name of the local run.")] = None,
    output_dir: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Where runs go (default .osmosis/benchmarks)."),
    ] = None,
    secrets_file: SecretsFile = None,
) -> None:
    """Run the benchmark locally (agents x Harbor tasks) and print its leaderboard."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.benchmarks import run_local

    run_local(config, get_output(), name=name, output_dir=output_dir, secrets_file=secrets_file)


@runs_app.command("list")
def runs_list_command(
    limit: PageLimit = 50, offset: PageOffset = 0, all_pages: AllPages = False
) -> None:
    """List benchmark runs on the platform."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.benchmarks import RUN_COLUMNS, RUNS_ENDPOINT
    from osmosis_cli.platform.listing import Listing

    Listing(
        RUNS_ENDPOINT,
        RUN_COLUMNS,
        plain=lambda r: f"{r.get('id')}\t{r.get('name')}\t{r.get('status')}",
        title="Benchmark runs",
        empty="No benchmark runs yet. Start one: osmosis benchmark submit CONFIG",
    ).emit(get_output(), limit=limit, offset=offset, all_pages=all_pages)


@runs_app.command("info")
def runs_info_command(run: RunArg) -> None:
    """Show a benchmark run: status, progress, agents and their results."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.benchmarks import leaderboard_lines
    from osmosis_cli.platform.client import PlatformClient
    from osmosis_cli.platform.run_ops import fetch_run

    output = get_output()
    data = fetch_run("benchmark", run, PlatformClient.from_login())
    if output.is_json:
        output.emit_detail(data)
        return
    output.emit_detail(
        {k: v for k, v in data.items() if k not in ("leaderboard", "agents")},
        title=f"Benchmark run {data.get('name') or run}",
    )
    for line in leaderboard_lines(
        [e for e in data.get("leaderboard") or [] if isinstance(e, dict)]
    ):
        output.emit_message(f"  {line}")


@runs_app.command("logs")
def runs_logs_command(
    run: RunArg,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new lines until the run ends.")
    ] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, max=200, help="Lines per request.")] = 200,
    cursor: Annotated[
        str | None, typer.Option("--cursor", help="Start after this cursor (from --json).")
    ] = None,
) -> None:
    """Print a benchmark run's log, oldest first (--follow: until it ends)."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.run_logs import show_logs

    show_logs("benchmark", run, get_output(), limit=limit, cursor=cursor, follow=follow)


@runs_app.command("stop")
def runs_stop_command(
    run: RunArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Stop without asking.")] = False,
) -> None:
    """Stop a running benchmark run."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.run_ops import stop_run

    stop_run("benchmark", run, get_output(), yes=yes)


@runs_app.command("download")
def runs_download_command(
    run: RunArg,
    output_dir: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Folder to write into (default: ./<run name>)."),
    ] = None,
    types: Annotated[
        str,
        typer.Option("--type", help="Comma-separated: summary, results, artifacts, logs, or all."),
    ] = "summary,results",
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace local files that differ.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask before large downloads.")
    ] = False,
) -> None:
    """Download a benchmark run's summary, results, artifacts or logs (resumable)."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.run_download import DownloadOptions, download_run

    options = DownloadOptions(run, output_dir, types, None, overwrite=overwrite, yes=yes)
    download_run("benchmark", options, get_output())
