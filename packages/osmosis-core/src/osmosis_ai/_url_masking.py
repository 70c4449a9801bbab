"""Masking credentials in URLs before they reach a log, a file, a console or an error body."""

from __future__ import annotations

from urllib.parse import urlsplit


def mask_url(url: str) -> str:
    """``url`` with its user-info and query replaced by ``***`` (``https://***@host/v1?***``):
    both can carry credentials (``user:pass@``, ``?api_key=``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid URL>"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    return parts._replace(netloc=netloc, query="***" if parts.query else "").geturl()
