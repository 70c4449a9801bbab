"""``osmosis auth login`` without ``--token``: the browser sign-in (OAuth 2.0 device
authorization grant, RFC 8628), as osmosis-ai 0.3.8 signs in.

1. ``POST /api/cli/device/authorize`` (no token) answers a ``device_code`` (secret, kept in
   memory), a short ``user_code`` to show, the ``verification_uri`` (and
   ``verification_uri_complete`` with the code filled in), ``expires_in`` and the poll
   ``interval``.
2. The CLI shows the URL and the code (and opens the browser on a terminal, unless
   ``OSMOSIS_NO_BROWSER=1``), then polls ``POST /api/cli/device/token`` every ``interval``
   seconds: ``authorization_pending`` → keep waiting; ``slow_down`` → wait 5 s longer each time;
   ``access_denied`` / ``expired_token`` → stop with what happened; ``200`` → the token.
3. The token goes straight to the credential store (keyring or the 0600 file), never to the
   screen, a log or an error message.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from dataclasses import dataclass
from typing import Any

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Output
from osmosis_cli.platform.client import PlatformClient

AUTHORIZE = "/api/cli/device/authorize"
TOKEN = "/api/cli/device/token"
MAX_INTERVAL_SEC = 30


@dataclass(frozen=True, slots=True)
class Grant:
    """What a completed sign-in returns (the token is never printed: see ``__repr__``)."""

    token: str
    user: dict[str, Any] | None
    expires_at: str | None

    def __repr__(self) -> str:
        return f"Grant(user={self.user!r}, expires_at={self.expires_at!r})"


def device_login(
    client: PlatformClient, output: Output, *, timeout: float = 900.0, open_browser: bool = True
) -> Grant:
    """Run the device sign-in against ``client``'s platform and return the grant."""
    started = _authorize(client)
    url = str(started.get("verification_uri_complete") or started["verification_uri"])
    code = str(started["user_code"])
    expires_in = float(started.get("expires_in") or timeout)
    # On stderr in every mode (a JSON line with --json): stdout keeps the one result envelope.
    output.warn(
        "SIGN_IN_REQUIRED",
        f"Open {url} in your browser and confirm the code {code} "
        f"(it expires in {max(1, int(expires_in // 60))} min).",
        verification_uri=url,
        user_code=code,
        expires_in=expires_in,
    )
    if open_browser and output.interactive and os.environ.get("OSMOSIS_NO_BROWSER") != "1":
        _open(url)
    interval = max(0.0, float(started.get("interval", 5)))
    deadline = time.monotonic() + min(timeout, expires_in)
    device_code = str(started["device_code"])
    output.progress("Waiting for the sign-in in the browser...")
    while True:
        try:
            granted = client.request("POST", TOKEN, json={"device_code": device_code})
        except CLIError as error:
            reason = error.details.get("platform_code")
            if reason == "authorization_pending":
                pass
            elif reason == "slow_down":
                interval = min(interval + 5, MAX_INTERVAL_SEC)
            elif reason == "access_denied":
                raise CLIError(
                    CLIErrorCode.AUTH_REQUIRED,
                    "The sign-in was denied in the browser; run 'osmosis auth login' again.",
                    details={"platform_code": reason},
                ) from None
            elif reason == "expired_token":
                raise _expired() from None
            else:
                raise
        else:
            return _grant(granted)
        if time.monotonic() + interval >= deadline:
            raise _expired()
        time.sleep(interval)


def _authorize(client: PlatformClient) -> dict[str, Any]:
    started = client.request("POST", AUTHORIZE, json={"deviceName": socket.gethostname()})
    needed = ("device_code", "user_code", "verification_uri")
    if not isinstance(started, dict) or not all(isinstance(started.get(k), str) for k in needed):
        raise CLIError(
            CLIErrorCode.PLATFORM_ERROR,
            "The platform did not start a browser sign-in; use 'osmosis auth login --token "
            "TOKEN' instead.",
        )
    return started


def _grant(body: Any) -> Grant:
    token = body.get("token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token:
        raise CLIError(CLIErrorCode.PLATFORM_ERROR, "The platform's sign-in answer has no token.")
    user = body.get("user")
    expires = body.get("expires_at")
    return Grant(
        token,
        user if isinstance(user, dict) else None,
        expires if isinstance(expires, str) else None,
    )


def _expired() -> CLIError:
    return CLIError(
        CLIErrorCode.AUTH_REQUIRED,
        "The sign-in code expired before it was confirmed; run 'osmosis auth login' again.",
        details={"platform_code": "expired_token"},
    )


def _open(url: str) -> None:
    import contextlib
    import webbrowser

    with contextlib.suppress(Exception):  # no browser here: the URL is on the screen
        if sys.stdin.isatty():
            webbrowser.open(url)
