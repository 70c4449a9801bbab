"""``eval logs`` / ``train logs``: one page of a run's log, or ``--follow`` until the run ends.

The platform pages logs with an opaque cursor. Following long-polls
(``GET .../logs?cursor=C&wait=20``): the platform holds the request until entries arrive or the
run ends, and says ``finished: true`` once the run has ended and every entry was read.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Output
from osmosis_cli.platform.client import PlatformClient
from osmosis_cli.platform.run_ops import Kind, run_path

FOLLOW_WAIT_SEC = 20  # long-poll time asked of the platform (below the 30 s request timeout)
POLL_INTERVAL_SEC = 2.0  # pause between polls when a platform answers at once without entries


def _line(entry: Mapping[str, Any]) -> str:
    level = str(entry.get("level") or "info").upper()
    return f"{entry.get('timestamp') or '-'} {level:<5} {entry.get('message', '')}"


def _page(
    client: PlatformClient, path: str, *, limit: int, cursor: str | None, wait: int | None
) -> dict[str, Any]:
    page = client.request(
        "GET",
        path,
        params={"limit": limit, "cursor": cursor, "wait": wait},
        timeout=FOLLOW_WAIT_SEC + 15 if wait else None,
    )
    if not isinstance(page, dict) or not isinstance(page.get("items"), list):
        raise CLIError(
            CLIErrorCode.PLATFORM_ERROR, "The platform answered the logs request without items."
        )
    return page


def show_logs(
    kind: Kind, run: str, output: Output, *, limit: int, cursor: str | None, follow: bool
) -> None:
    client = PlatformClient.from_login()
    path = run_path(kind, run, "logs")
    if not follow:
        emit_log_page(_page(client, path, limit=limit, cursor=cursor, wait=None), output)
        return
    _follow(client, path, output, limit=limit, cursor=cursor)


def emit_log_page(page: Any, output: Output, *, next_step: str | None = None) -> None:
    """One page of a log (a run's or a dataset's): lines oldest first, then how to get more."""
    if not isinstance(page, dict) or not isinstance(page.get("items"), list):
        raise CLIError(
            CLIErrorCode.PLATFORM_ERROR, "The platform answered the logs request without items."
        )
    items = [e for e in page["items"] if isinstance(e, dict)]
    next_cursor = page.get("next_cursor")
    if output.is_json:
        output.emit_list(
            items,
            columns=[],
            plain=_line,
            extra={
                "has_more": bool(page.get("has_more")),
                "next_cursor": next_cursor,
                "run_status": page.get("run_status"),
                "finished": bool(page.get("finished")),
            },
        )
        return
    if not items:
        output.emit_message("No log lines yet.")
    for entry in items:
        output.emit_message(_line(entry))
    if page.get("has_more") and next_cursor:
        output.progress(f"More: --cursor {next_cursor}")
    elif next_step:
        output.progress(f"Next: {next_step}")


def _follow(
    client: PlatformClient, path: str, output: Output, *, limit: int, cursor: str | None
) -> None:
    while True:
        started = time.monotonic()
        page = _page(client, path, limit=limit, cursor=cursor, wait=FOLLOW_WAIT_SEC)
        items = [e for e in page["items"] if isinstance(e, dict)]
        for entry in items:
            output.emit_event({"log": entry}, _line(entry))
        cursor = page.get("next_cursor") or cursor
        if page.get("finished"):
            status = page.get("run_status")
            output.emit_event(
                {"run": {"status": status, "finished": True, "cursor": cursor}},
                f"-- the run ended: {status}",
            )
            return
        if not items and not page.get("has_more") and time.monotonic() - started < 1.0:
            time.sleep(POLL_INTERVAL_SEC)  # the platform does not long-poll: do not spin
