"""``route_token``: the proxy process's per-rollout bearer tokens."""

from __future__ import annotations

import base64
import hashlib
import hmac

from osmosis_ai.eval._impl.proxy.asgi import route_token


def test_route_token_is_the_hmac_of_rollout_and_generation_under_the_key() -> None:
    for key in (b"k" * 32, b"another key"):
        for rollout_id, generation in (("r1", 1), ("r1", 2), ("abc/é", 7)):
            mac = hmac.new(key, f"{rollout_id}/{generation}".encode(), hashlib.sha256).digest()
            expected = f"{generation}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"
            assert route_token(key, rollout_id, generation) == expected
    assert route_token(b"k" * 32, "r1", 1) != route_token(b"other", "r1", 1)
