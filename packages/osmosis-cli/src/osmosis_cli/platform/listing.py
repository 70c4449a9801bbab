"""Paged list commands (``eval list``, ``dataset list``, ``secret list``, ``rollout list``...).

Every platform list endpoint takes ``limit``/``offset`` and answers
``{items, total_count, has_more, next_offset}``; ``--all`` follows ``next_offset`` to the end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Column, Output
from osmosis_cli.platform.client import PlatformClient

MAX_PAGES = 1000  # --all stops here even if a platform keeps saying has_more


def fetch_page(
    client: PlatformClient, path: str, *, limit: int, offset: int, params: Mapping[str, Any]
) -> dict[str, Any]:
    page = client.request("GET", path, params={**params, "limit": limit, "offset": offset})
    if not isinstance(page, dict) or not isinstance(page.get("items"), list):
        raise CLIError(
            CLIErrorCode.PLATFORM_ERROR,
            f"The platform answered GET {path} without an item list.",
            details={"path": path},
        )
    return page


@dataclass(frozen=True, slots=True)
class Listing:
    """One paged list endpoint and how its items print (columns, a plain line, texts)."""

    path: str
    columns: Sequence[Column]
    plain: Callable[[Mapping[str, Any]], str]
    title: str
    empty: str

    def emit(
        self,
        output: Output,
        *,
        limit: int,
        offset: int,
        all_pages: bool,
        params: Mapping[str, Any] | None = None,
        client: PlatformClient | None = None,
    ) -> None:
        """Fetch one page (or every page with ``all_pages``) and print it as a list envelope."""
        client = client or PlatformClient.from_login()
        query = params or {}
        page = fetch_page(client, self.path, limit=limit, offset=offset, params=query)
        items = [item for item in page["items"] if isinstance(item, dict)]
        next_offset = page.get("next_offset") if page.get("has_more") else None
        pages = 1
        while all_pages and isinstance(next_offset, int) and pages < MAX_PAGES:
            page = fetch_page(client, self.path, limit=limit, offset=next_offset, params=query)
            items.extend(item for item in page["items"] if isinstance(item, dict))
            next_offset = page.get("next_offset") if page.get("has_more") else None
            pages += 1
        output.emit_list(
            items,
            columns=self.columns,
            plain=self.plain,
            title=self.title,
            empty=self.empty,
            total_count=page.get("total_count"),
            next_offset=next_offset if isinstance(next_offset, int) else None,
        )
        if isinstance(next_offset, int):
            output.progress(f"More: --offset {next_offset} (or --all)")
