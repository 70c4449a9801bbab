"""bind_tcp_listener: accepted connections get TCP_NODELAY (no ~40 ms Nagle stalls)."""

from __future__ import annotations

import asyncio
import socket

from osmosis_ai.listening_socket import bind_tcp_listener


async def test_accepted_connections_have_nodelay() -> None:
    sock = bind_tcp_listener("127.0.0.1", 0)
    port = sock.getsockname()[1]
    assert port != 0
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("socket")
        accepted.set_result(peer.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(on_connect, sock=sock)
    async with server:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(accepted, 5) != 0
        writer.close()
