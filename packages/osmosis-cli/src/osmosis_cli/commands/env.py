"""``osmosis env list`` / ``osmosis env info SOURCE:NAME``: environments from other ecosystems.

Thin over :func:`osmosis_ai.rollout.integrations.environments.list_environments` and
:func:`~osmosis_ai.rollout.integrations.environments.environment_info` (docs/environments.md).
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer

from osmosis_cli.cli_app import new_typer

app = new_typer(
    "env",
    help="List and inspect environments from other ecosystems (verifiers, Reasoning Gym, ...).",
)


@app.command("list")
def list_command(
    source: Annotated[
        str | None,
        typer.Argument(help="Only this source (verifiers, inspect, reasoning-gym, harbor)."),
    ] = None,
) -> None:
    """List the environments each installed adapter sees (sources not installed say how)."""
    from osmosis_ai.rollout.integrations.environments import SOURCES, list_environments
    from osmosis_cli.errors import validation
    from osmosis_cli.output import Column, get_output

    if source is not None and source not in SOURCES:
        raise validation(
            f"Unknown environment source {source!r}; the sources are {', '.join(SOURCES)}.",
            source=source,
        )
    out = get_output()
    items: list[dict[str, Any]] = []
    for listing in list_environments([source] if source else None):
        if listing.missing is not None:
            items.append(
                {"spec": f"{listing.source}:", "installed": False, "hint": listing.missing}
            )
            continue
        items.extend(
            {
                "spec": info.spec,
                "installed": True,
                "description": info.description,
                "rows": info.rows,
                "metrics": list(info.metrics),
                "needs": list(info.needs),
            }
            for info in listing.environments
        )
    out.emit_list(
        items,
        columns=[
            Column("spec", "Environment"),
            Column("rows", "Rows"),
            Column("metrics", "Metrics", render=lambda i: ", ".join(i.get("metrics") or [])),
            Column(
                "description",
                "Description",
                render=lambda i: str(i.get("description") or i.get("hint") or ""),
            ),
        ],
        plain=lambda item: str(item["spec"]),
        title="Environments",
        empty="No environment source is installed: pip install 'osmosis-ai[reasoning-gym]' "
        "(or [verifiers], [inspect], [harbor]).",
    )


@app.command("info")
def info_command(
    spec: Annotated[
        str, typer.Argument(metavar="SOURCE:NAME", help="e.g. 'reasoning-gym:leg_counting?size=5'.")
    ],
) -> None:
    """Load one environment and show its rows, metrics (one per reward function) and needs."""
    from osmosis_ai.errors import ConfigurationError
    from osmosis_ai.rollout.integrations.environments import environment_info
    from osmosis_cli.errors import CLIError, CLIErrorCode, validation
    from osmosis_cli.output import get_output

    # As `osmosis eval run --env` does: modules named by the spec may live in the current folder.
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    try:
        info = environment_info(spec)
    except ModuleNotFoundError as exc:
        raise CLIError(CLIErrorCode.VALIDATION, str(exc), details={"spec": spec}) from None
    except ConfigurationError as exc:
        raise validation(str(exc), spec=spec) from None
    get_output().emit_detail(
        {
            "spec": info.spec,
            "description": info.description,
            "rows": info.rows,
            "metrics": list(info.metrics),
            "needs": list(info.needs),
        },
        title=info.spec,
    )
