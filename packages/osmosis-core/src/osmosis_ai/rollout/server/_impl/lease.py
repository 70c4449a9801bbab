"""Polling lease tokens.

A lease token authorizes polling for one rollout's result. The token itself is never stored:
memory and the outbox keep its SHA-256 digest (compared in constant time) and the random salt
it was derived from (:meth:`LeaseKey.derive`, an HMAC under the outbox's ``lease.key``), so
a retried admission can be answered with the same token. A memory dump or the journal alone
cannot be replayed as a token; reading both the journal and ``lease.key`` (each 0600, like the
callback bearer keys the outbox keeps) could.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import os
import secrets

_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))


def mint_lease_token() -> tuple[str, bytes]:
    """Return ``(token, digest)``: 32 random bytes as URL-safe base64 (43 chars) and its hash."""
    token = secrets.token_urlsafe(32)
    return token, hash_lease_token(token)


def hash_lease_token(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def lease_matches(token: str, digest: bytes) -> bool:
    """Constant-time check of a presented token against the stored digest."""
    return hmac.compare_digest(hash_lease_token(token), digest)


class LeaseKey:
    """A server's lease key, ready to derive tokens at admission rate.

    HMAC-SHA256 (RFC 2104) with the key's inner and outer hash states computed once: each
    token then costs two hash-state copies instead of ``hmac.digest``'s per-call setup (with
    OpenSSL 3 that setup is most of its cost). Salts are unique without a system call per
    admission: 8 random bytes per key and a counter (the token's secrecy is the key's; a salt
    only has to differ between admissions).
    """

    def __init__(self, key: bytes) -> None:
        if len(key) > 64:  # longer than SHA-256's block: hashed first, as HMAC specifies
            key = hashlib.sha256(key).digest()
        block = key.ljust(64, b"\0")
        self._inner = hashlib.sha256(block.translate(_IPAD))
        self._outer = hashlib.sha256(block.translate(_OPAD))
        self._prefix = os.urandom(8)
        self._counter = itertools.count()

    def new_salt(self) -> bytes:
        """16 bytes no other admission under this key object has."""
        return self._prefix + next(self._counter).to_bytes(8, "big")

    def derive(self, salt: bytes) -> tuple[str, bytes]:
        """Return ``(token, digest)`` for the admission identified by ``salt``: the token is an
        HMAC of the salt under the key, so a retried admission (same id, same request) gets the
        same token back without the token itself being stored anywhere."""
        inner = self._inner.copy()
        inner.update(salt)
        outer = self._outer.copy()
        outer.update(inner.digest())
        token = base64.urlsafe_b64encode(outer.digest()).rstrip(b"=").decode()
        return token, hash_lease_token(token)
