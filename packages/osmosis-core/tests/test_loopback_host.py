"""``osmosis_ai._util.serving.is_loopback_host``: the one rule for "this host is this machine"
(the CLI's serve warning and platform-URL check, eval pricing and the fleet's proxy warning)."""

from __future__ import annotations

import pytest

from osmosis_ai._util.serving import is_loopback_host
from osmosis_ai.rollout.server.serving import is_loopback_host as public_is_loopback_host


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "127.0.0.2", "127.255.255.254", "::1"])
def test_loopback_names_and_addresses(host: str) -> None:
    assert is_loopback_host(host)


@pytest.mark.parametrize(
    "host",
    [
        "",
        "0.0.0.0",  # "every interface" when binding, not an address of this machine's loopback
        "::",
        "10.0.0.5",
        "example.com",
        # Only the exact name: a fully qualified "localhost." or any name that merely starts
        # with "localhost" or "127." may resolve anywhere, so it counts as another machine.
        "localhost.",
        "localhostx",
        "localhost.example.com",
        "127.0.0.1.nip.io",
        "[::1]",  # a URL's bracketed form: callers pass urlsplit(url).hostname, "::1"
    ],
)
def test_anything_else_is_another_machine(host: str) -> None:
    assert not is_loopback_host(host)


def test_the_public_name_is_the_same_function() -> None:
    assert public_is_loopback_host is is_loopback_host
