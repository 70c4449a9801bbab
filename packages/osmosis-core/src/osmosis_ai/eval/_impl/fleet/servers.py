"""Which rollout servers an evaluation drives (``--servers`` / ``--servers-file``), and how much
work each takes.

The servers file is the one ``osmosis rollout deploy`` writes: one base URL per line; blank
lines and ``#`` comments are ignored. A URL never carries credentials (no ``user:pass@``, no
query): the servers' inbound key comes from ``OSMOSIS_ROLLOUT_API_KEY``, the variable the
servers themselves read, so a servers file can be shared and committed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from osmosis_ai.eval._impl.plan.source import EvalPlanError

#: The environment variable holding the servers' inbound API key (the servers read it too).
SERVERS_KEY_ENV = "OSMOSIS_ROLLOUT_API_KEY"


def server_capacity(health: Mapping[str, Any]) -> int | None:
    """How many rollouts a server runs at once, from its ``/health`` body (``None``: unknown).

    The local backend reports ``concurrency.max_concurrent``; the worker pool and other backends
    ``max_queue_depth``.
    """
    concurrency = health.get("concurrency")
    if isinstance(concurrency, Mapping):
        value = concurrency.get("max_concurrent")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    value = health.get("max_queue_depth")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def read_servers_file(path: Path) -> list[str]:
    """The URLs listed in ``path`` (one per line, ``#`` comments), in order."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EvalPlanError(
            f"cannot read the servers file {path}: {exc.strerror or exc}; pass the file "
            "`osmosis rollout deploy` wrote (one server URL per line)"
        ) from None
    urls = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return [url for url in urls if url]


def normalize_server_url(url: str) -> str:
    """``url`` checked (http/https, a host, no credentials) and without a trailing ``/``."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise EvalPlanError(
            f"server URL {url!r} is not a valid URL; expected e.g. http://10.0.0.5:8000"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EvalPlanError(
            f"server URL {url!r} must be http:// or https:// with a host, e.g. http://10.0.0.5:8000"
        )
    if parts.username is not None or parts.password is not None or parts.query:
        raise EvalPlanError(
            "a server URL must not carry credentials or a query string; put the servers' "
            f"inbound key in {SERVERS_KEY_ENV} instead"
        )
    del port  # validated above (a non-numeric port raises)
    return parts._replace(fragment="").geturl().rstrip("/")


def resolve_servers(servers: Sequence[str] | None, servers_file: Path | None) -> list[str]:
    """``servers`` (each item may hold several comma-separated URLs) then the file's, checked,
    duplicates refused. An empty result means "start a local server" (the default)."""
    raw: list[str] = []
    for item in servers or ():
        raw.extend(part for part in item.split(",") if part.strip())
    if servers_file is not None:
        listed = read_servers_file(servers_file)
        if not listed:
            raise EvalPlanError(f"the servers file {servers_file} lists no server URL")
        raw.extend(listed)
    urls = [normalize_server_url(url) for url in raw]
    seen: set[str] = set()
    for url in urls:
        if url in seen:
            raise EvalPlanError(f"server {url} is listed twice; list each rollout server once")
        seen.add(url)
    return urls


def remote_servers(urls: Sequence[str]) -> list[str]:
    """The ``urls`` (checked by :func:`normalize_server_url`) whose host is not this machine, by
    the one loopback rule (:func:`~osmosis_ai._util.serving.is_loopback_host`: ``localhost`` or
    a loopback IP); such servers cannot reach a proxy listening on loopback only."""
    from osmosis_ai._util.serving import is_loopback_host  # asyncio: not at import time

    return [url for url in urls if not is_loopback_host(urlsplit(url).hostname or "")]
