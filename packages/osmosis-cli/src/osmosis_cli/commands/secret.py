"""``osmosis secret set | list | delete`` (secrets stored on the platform)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from osmosis_cli.cli_app import new_typer
from osmosis_cli.commands.options import AllPages, PageLimit, PageOffset

app = new_typer("secret", help="Store secrets on the platform (values never printed).")


class Scope(StrEnum):
    personal = "personal"
    workspace = "workspace"


class ListScope(StrEnum):
    all = "all"
    personal = "personal"
    workspace = "workspace"


ScopeOption = Annotated[
    Scope, typer.Option("--scope", help="personal (only you) or workspace (everyone in it).")
]


@app.command("set")
def set_command(
    name: Annotated[str, typer.Argument(help="Secret name, e.g. OPENAI_API_KEY.", metavar="NAME")],
    env: Annotated[
        str | None,
        typer.Option("--env", metavar="VAR", help="Read the value from this environment variable."),
    ] = None,
    scope: ScopeOption = Scope.personal,
) -> None:
    """Store a secret; the value comes from --env VAR or a hidden prompt, never from argv."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.secret_store import set_secret

    set_secret(name, get_output(), env_var=env, scope=scope.value)


@app.command("list")
def list_command(
    scope: Annotated[ListScope, typer.Option("--scope")] = ListScope.all,
    limit: PageLimit = 50,
    offset: PageOffset = 0,
    all_pages: AllPages = False,
) -> None:
    """List secret names (never values)."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.secret_store import list_secrets

    list_secrets(get_output(), scope=scope.value, limit=limit, offset=offset, all_pages=all_pages)


@app.command("delete")
def delete_command(
    name: Annotated[str, typer.Argument(help="Secret name.", metavar="NAME")],
    scope: ScopeOption = Scope.personal,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
) -> None:
    """Delete a secret from the platform."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.secret_store import delete_secret

    delete_secret(name, get_output(), scope=scope.value, yes=yes)
