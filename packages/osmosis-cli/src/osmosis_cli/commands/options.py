"""Options that several commands declare alike (``Annotated`` aliases typer reads).

The paging options of every platform list command (``dataset list``, ``rollout list``,
``secret list``, ``eval list`` and ``train list``): see :mod:`osmosis_cli.platform.listing`.
"""

from __future__ import annotations

from typing import Annotated

import typer

PageLimit = Annotated[int, typer.Option("--limit", min=1, max=200)]
PageOffset = Annotated[int, typer.Option("--offset", min=0)]
AllPages = Annotated[bool, typer.Option("--all", help="Fetch every page.")]
