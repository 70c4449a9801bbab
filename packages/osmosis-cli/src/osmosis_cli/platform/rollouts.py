"""``osmosis rollout list``: the rollouts the platform has synced from the workspace repository."""

from __future__ import annotations

from osmosis_cli.output import Column, Output
from osmosis_cli.platform.listing import Listing

ENDPOINT = "/api/cli/rollouts"
COLUMNS = [
    Column("name", "Name"),
    Column("branch", "Branch"),
    Column("commit_sha", "Commit"),
    Column("entrypoint", "Entrypoint"),
    Column("synced_at", "Synced"),
]


ROLLOUTS = Listing(
    ENDPOINT,
    COLUMNS,
    plain=lambda r: f"{r.get('name')}\t{r.get('branch')}\t{r.get('commit_sha')}",
    title="Rollouts on the platform",
    empty="No rollouts synced yet: push the workspace to the connected repository.",
)


def list_rollouts(
    output: Output, *, branch: str | None, limit: int, offset: int, all_pages: bool
) -> None:
    ROLLOUTS.emit(
        output, limit=limit, offset=offset, all_pages=all_pages, params={"branch": branch}
    )
