"""Polling lease tokens.

A lease token authorizes polling for one rollout's result. The token itself is never stored:
memory and the outbox keep its SHA-256 digest (compared in constant time) and the random salt
it was derived from (:func:`derive_lease_token`, an HMAC under the outbox's ``lease.key``), so
a retried admission can be answered with the same token. A memory dump or the journal alone
cannot be replayed as a token; reading both the journal and ``lease.key`` (each 0600, like the
callback bearer keys the outbox keeps) could.
"""

from __future__ import annotations

import base64
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


def derive_lease_token(key: bytes, salt: bytes) -> tuple[str, bytes]:
    """Return ``(token, digest)`` for the admission identified by ``salt``: the token is an
    HMAC of the salt under the server's outbox key, so a retried admission (same id, same
    request) gets the same token back without the token itself being stored anywhere."""
    token = base64.urlsafe_b64encode(hmac.digest(key, salt, "sha256")).rstrip(b"=").decode()
    return token, hash_lease_token(token)
