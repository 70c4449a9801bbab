"""Polling lease tokens (the 0.3.8 module path, kept as a facade).

The implementation is private (:mod:`osmosis_ai.rollout.server._impl.lease`); this module
keeps ``osmosis_ai.rollout.server.lease`` importable for code written against 0.3.8.
"""

from __future__ import annotations

from osmosis_ai.rollout.server._impl.lease import (
    LeaseKey,
    hash_lease_token,
    lease_matches,
    mint_lease_token,
)

__all__ = ["LeaseKey", "hash_lease_token", "lease_matches", "mint_lease_token"]
