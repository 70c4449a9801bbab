"""The one bearer rule and body reader (:mod:`osmosis_ai._util.asgi`)."""

from __future__ import annotations

from typing import Any

import pytest

from osmosis_ai._util.asgi import BodyTooLarge, ClientGone, bearer_matches, bearer_token, read_body


def _scope(*headers: tuple[bytes, bytes]) -> dict[str, Any]:
    return {"type": "http", "headers": list(headers)}


@pytest.mark.parametrize("scheme", [b"Bearer", b"bearer", b"BEARER", b"bEaReR"])
def test_the_scheme_is_case_insensitive(scheme: bytes) -> None:
    scope = _scope((b"authorization", scheme + b" tok"))
    assert bearer_token(scope) == b"tok"
    assert bearer_matches(scope, "tok")


@pytest.mark.parametrize(
    "value", [b"Basic tok", b"Bearer", b"Bearer ", b"Bearer TOK", b"Bearer tok2", b"tok"]
)
def test_other_schemes_missing_and_wrong_tokens_are_refused(value: bytes) -> None:
    assert not bearer_matches(_scope((b"authorization", value)), "tok")


def test_no_header_is_refused() -> None:
    assert bearer_token(_scope()) is None
    assert not bearer_matches(_scope((b"x-other", b"Bearer tok")), b"tok")


def _receiver(*messages: dict[str, Any]) -> Any:
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        return queue.pop(0)

    return receive


async def test_read_body_joins_chunks_and_enforces_the_limit() -> None:
    chunks = (
        {"type": "http.request", "body": b"ab", "more_body": True},
        {"type": "http.request", "body": b"cd"},
    )
    assert await read_body(_receiver(*chunks)) == b"abcd"
    with pytest.raises(BodyTooLarge):
        await read_body(_receiver(*chunks), limit=3)
    declared = _scope((b"content-length", b"10"))
    with pytest.raises(BodyTooLarge):
        await read_body(_receiver(*chunks), scope=declared, limit=3)
    with pytest.raises(ClientGone):
        await read_body(_receiver({"type": "http.disconnect"}))
