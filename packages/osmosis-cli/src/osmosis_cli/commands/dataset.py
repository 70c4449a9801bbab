"""``osmosis dataset validate | upload | list | info | preview | download | logs | delete``
(platform datasets) and ``dataset curate`` (local: :mod:`osmosis_cli.commands.eval_actions`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from osmosis_cli.cli_app import LazyCommand, new_typer
from osmosis_cli.commands.options import AllPages, PageLimit, PageOffset

app = new_typer(
    "dataset",
    help="Upload and manage datasets on the platform; curate one from a local eval run.",
)

# Local: a dataset curated from an eval run (osmosis_cli.commands.eval_actions).
LAZY_SUBCOMMANDS = {
    "curate": LazyCommand(
        "osmosis_cli.commands.eval_actions",
        "curate",
        "Keep an eval run's rows in a pass-rate band, as JSONL ready for upload.",
    )
}


@app.command("validate")
def validate_command(
    file: Annotated[Path, typer.Argument(help="A .jsonl, .csv or .parquet file.", metavar="FILE")],
) -> None:
    """Check FILE against the platform's dataset rules locally (nothing is sent)."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.datasets import check_dataset_file

    check_dataset_file(file, get_output())


@app.command("upload")
def upload_command(
    file: Annotated[Path, typer.Argument(help="A .jsonl, .csv or .parquet file.", metavar="FILE")],
    name: Annotated[
        str | None, typer.Option("--name", help="Dataset name (default: the file name stem).")
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace a dataset with the same name.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Replace without asking.")] = False,
) -> None:
    """Validate FILE locally (as 'dataset validate' does), then upload it in parts."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.datasets import upload_dataset

    upload_dataset(file, get_output(), name=name, overwrite=overwrite, yes=yes)


@app.command("list")
def list_command(
    limit: PageLimit = 50,
    offset: PageOffset = 0,
    all_pages: AllPages = False,
) -> None:
    """List the workspace's datasets."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.datasets import list_datasets

    list_datasets(get_output(), limit=limit, offset=offset, all_pages=all_pages)


@app.command("info")
def info_command(
    name: Annotated[str, typer.Argument(help="Dataset name.", metavar="NAME")],
) -> None:
    """Show one dataset."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.datasets import show_dataset

    show_dataset(name, get_output())


@app.command("preview")
def preview_command(
    name: Annotated[str, typer.Argument(help="Dataset name.", metavar="NAME")],
    rows: Annotated[int, typer.Option("--rows", min=1, help="Rows to show.")] = 5,
) -> None:
    """Show the first rows of an uploaded dataset, as the platform parsed them."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.datasets import preview_dataset

    preview_dataset(name, get_output(), rows=rows)


@app.command("download")
def download_command(
    name: Annotated[str, typer.Argument(help="Dataset name.", metavar="NAME")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Destination file or existing folder."),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace the destination file if it exists.")
    ] = False,
) -> None:
    """Download a dataset's file (resumable, checksum-verified)."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.datasets import download_dataset

    download_dataset(name, get_output(), dest=output, overwrite=overwrite)


@app.command("logs")
def logs_command(
    name: Annotated[str, typer.Argument(help="Dataset name.", metavar="NAME")],
    limit: PageLimit = 50,
    cursor: Annotated[
        str | None, typer.Option("--cursor", help="Continue from a previous page's cursor.")
    ] = None,
) -> None:
    """Show a dataset's processing log, oldest first."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.datasets import dataset_logs

    dataset_logs(name, get_output(), limit=limit, cursor=cursor)


@app.command("delete")
def delete_command(
    name: Annotated[str, typer.Argument(help="Dataset name.", metavar="NAME")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
) -> None:
    """Delete a dataset from the platform."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.datasets import delete_dataset

    delete_dataset(name, get_output(), yes=yes)
