"""A pre-bound TCP listening socket for servers that must know their port before serving.

Servers in osmosis often bind port 0 themselves (to learn the free port and hand it to someone)
and pass the socket to uvicorn. A socket made as ``socket.socket(AF_INET, SOCK_STREAM)`` reports
protocol 0, and asyncio only enables ``TCP_NODELAY`` on accepted connections whose socket says
it is TCP; without it Nagle's algorithm and delayed ACKs add about 40 ms to every small
request/response exchange. This module makes the socket the right way once.
"""

from __future__ import annotations

import socket


def bind_tcp_listener(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """Bind (not yet listen) a TCP socket on ``host:port``; ``port=0`` picks a free port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock
