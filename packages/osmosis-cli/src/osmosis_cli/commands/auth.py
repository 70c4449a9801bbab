"""``osmosis auth login | logout | whoami``."""

from __future__ import annotations

from typing import Annotated

import typer

from osmosis_cli.cli_app import new_typer

app = new_typer("auth", help="Log in to the platform (token in the OS keyring or a 0600 file).")


@app.command("login")
def login_command(
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="A platform access token; '-' reads it from stdin. Omit to be asked for it.",
        ),
    ] = None,
    verify: Annotated[
        bool, typer.Option("--verify/--no-verify", help="Check the token with the platform.")
    ] = True,
) -> None:
    """Store a platform token for OSMOSIS_PLATFORM_URL."""
    import sys

    from osmosis_cli.errors import CLIError, CLIErrorCode
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.client import PlatformClient
    from osmosis_cli.platform.credentials import store_token
    from osmosis_cli.platform.settings import platform_url

    output = get_output()
    url = platform_url()
    if token == "-":
        token = sys.stdin.readline().strip()
    elif token is None:
        if not output.interactive:
            raise CLIError(
                CLIErrorCode.INTERACTIVE_REQUIRED,
                "No token given and this session is not interactive. Use --token TOKEN, "
                "--token - (stdin) or set OSMOSIS_TOKEN.",
                details={"flags": ["--token"]},
            )
        token = output.prompt_secret("Platform token").strip()
    if not token:
        raise CLIError(CLIErrorCode.VALIDATION, "The token is empty.")
    user: dict[str, object] | None = None
    if verify:
        me = PlatformClient(url, token).request("GET", "/api/cli/whoami")
        user = me.get("user") if isinstance(me, dict) else None
    where = store_token(url, token)
    who = f" as {user.get('email') or user.get('id')}" if isinstance(user, dict) else ""
    output.emit_operation(
        "auth.login",
        message=f"Logged in to {url}{who}; token stored in the {where}.",
        resource={"platform_url": url, "user": user, "storage": where},
    )


@app.command("logout")
def logout_command(
    yes: Annotated[
        bool,
        typer.Option(
            "--yes", "-y", help="Accepted as in osmosis-ai 0.3 (logout never asks to confirm)."
        ),
    ] = False,
) -> None:
    """Forget the stored token for OSMOSIS_PLATFORM_URL."""
    import os

    from osmosis_cli.output import get_output
    from osmosis_cli.platform.credentials import ENV_TOKEN, delete_token
    from osmosis_cli.platform.settings import platform_url

    output = get_output()
    url = platform_url()
    removed = delete_token(url)
    if os.environ.get(ENV_TOKEN):
        output.warn("ENV_TOKEN_SET", f"{ENV_TOKEN} is set and is still used; unset it too.")
    message = (
        f"Logged out of {url} (removed from {' and '.join(removed)})."
        if removed
        else f"No stored token for {url}; nothing to do."
    )
    output.emit_operation(
        "auth.logout", message=message, resource={"platform_url": url, "removed_from": removed}
    )


@app.command("whoami")
def whoami_command() -> None:
    """Show who the stored token (or OSMOSIS_TOKEN) belongs to."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.client import PlatformClient
    from osmosis_cli.platform.credentials import require_token
    from osmosis_cli.platform.settings import platform_url

    url = platform_url()
    token = require_token(url)
    me = PlatformClient(url, token.value).request("GET", "/api/cli/whoami")
    me = me if isinstance(me, dict) else {}
    get_output().emit_detail(
        {
            "platform_url": url,
            "user": me.get("user"),
            "workspace": me.get("workspace"),
            "token_source": token.source,
            "token_expires_at": (me.get("token") or {}).get("expires_at"),
        },
        title="Logged in",
    )
