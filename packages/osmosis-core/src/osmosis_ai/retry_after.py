"""``parse_retry_after``: the one reading of an HTTP ``Retry-After`` header (its owner is
:mod:`osmosis_ai._util.backoff`; this documented path stays for the CLI and older imports)."""

from __future__ import annotations

from osmosis_ai._util.backoff import parse_retry_after

__all__ = ["parse_retry_after"]
