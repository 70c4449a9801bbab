"""The one framing of supervised children's control channels (:mod:`osmosis_ai._util.framing`)."""

from __future__ import annotations

import asyncio

from osmosis_ai._util.framing import LineSplitter, decode, encode, read_message


def test_a_message_is_one_compact_line() -> None:
    line = encode({"op": "spawn", "text": "a\nb"})
    assert line == b'{"op":"spawn","text":"a\\nb"}\n'
    assert line.count(b"\n") == 1
    assert decode(line) == {"op": "spawn", "text": "a\nb"}


def test_the_splitter_keeps_a_partial_line_for_the_next_chunk() -> None:
    data = encode({"n": 1}) + encode({"n": 2})
    splitter = LineSplitter()
    assert splitter.feed(data[:5]) == []
    assert splitter.feed(data[5:12]) == [{"n": 1}]
    assert splitter.feed(data[12:]) == [{"n": 2}]


async def test_read_message_until_the_end_of_the_stream() -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(encode({"op": "ready"}) + encode({"op": "closed"}))
    reader.feed_eof()
    assert await read_message(reader) == {"op": "ready"}
    assert await read_message(reader) == {"op": "closed"}
    assert await read_message(reader) is None
