"""Polling lease tokens.

A lease token authorizes polling for one rollout's result. Only its SHA-256 digest is kept (in
memory and in the outbox), so a leaked registry dump or outbox file cannot be replayed as a
token, and comparisons are constant-time so the digest cannot be guessed byte by byte.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets


def mint_lease_token() -> tuple[str, bytes]:
    """Return ``(token, digest)``: 32 random bytes as URL-safe base64 (43 chars) and its hash."""
    token = secrets.token_urlsafe(32)
    return token, hash_lease_token(token)


def hash_lease_token(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def lease_matches(token: str, digest: bytes) -> bool:
    """Constant-time check of a presented token against the stored digest."""
    return hmac.compare_digest(hash_lease_token(token), digest)
