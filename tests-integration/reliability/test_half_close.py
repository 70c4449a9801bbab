"""Pipelined requests followed by a half-close (the client's ``shutdown(SHUT_WR)``: "that is
all I will send") are each answered, then the server closes the connection. They used to get
no answer at all, or only some: the end of the client's stream closed the connection at once,
dropping the responses not yet written."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from reliability_support import body


def _post(path: str, payload: dict[str, Any]) -> bytes:
    data = json.dumps(payload).encode()
    return (
        f"POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    ).encode() + data


async def _exchange(port: int, requests: list[bytes]) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"".join(requests))
    await writer.drain()
    writer.write_eof()
    answer = await reader.read()  # until the server closes the connection
    writer.close()
    await writer.wait_closed()
    return answer


async def test_pipelined_requests_then_a_half_close_are_all_answered(server_factory: Any) -> None:
    server = server_factory()
    await server.start()
    health = b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n"
    counts = []
    for trial in range(30):
        n = 1 + trial % 5
        requests = [health] * n + [_post("/rollout", body(f"r{trial}"))]
        answer = await _exchange(server.port, requests)
        counts.append(answer.count(b"HTTP/1.1 2"))
    assert counts == [1 + trial % 5 + 1 for trial in range(30)]
