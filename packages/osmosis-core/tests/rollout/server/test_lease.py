"""Lease tokens: the precomputed HMAC is RFC 2104 HMAC-SHA256, and salts never repeat."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

import pytest

from osmosis_ai.rollout.server._impl.lease import LeaseKey, lease_matches


@pytest.mark.parametrize("key_size", [0, 16, 32, 64, 65, 200])
def test_tokens_are_the_hmac_of_the_salt_under_the_key(key_size: int) -> None:
    key = os.urandom(key_size)
    lease_key = LeaseKey(key)
    for salt in (b"", os.urandom(16), os.urandom(100)):
        expected = base64.urlsafe_b64encode(hmac.digest(key, salt, "sha256")).rstrip(b"=")
        token, digest = lease_key.derive(salt)
        assert token == expected.decode()
        assert digest == hashlib.sha256(token.encode()).digest()
        assert lease_matches(token, digest)
        assert lease_key.derive(salt) == (token, digest)  # the precomputed states are reusable


def test_salts_are_unique_per_key_object_and_between_objects() -> None:
    key = os.urandom(32)
    first, second = LeaseKey(key), LeaseKey(key)  # e.g. a server and its restart
    salts = [first.new_salt() for _ in range(1000)] + [second.new_salt() for _ in range(1000)]
    assert len(set(salts)) == len(salts)
    assert {len(salt) for salt in salts} == {16}
    assert first.derive(salts[0]) != first.derive(salts[1])


def test_the_0_3_8_module_path_is_a_facade_over_the_private_module() -> None:
    import osmosis_ai.rollout.server._impl.lease as private
    import osmosis_ai.rollout.server.lease as public

    for name in public.__all__:
        assert getattr(public, name) is getattr(private, name), name
    token, digest = public.mint_lease_token()
    assert public.lease_matches(token, digest)
