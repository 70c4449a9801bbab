"""One ``write`` per connection per event-loop turn: a response's head leaves with its body.

uvicorn writes a response's head (status line and headers) and its body with two
``transport.write`` calls, and the transport sends each at once: two ``write`` syscalls and two
TCP segments per response, although the head is ~115 bytes and the body follows within the same
turn. A rollout takes two responses (the ``202`` and its result), and a loopback send costs
kernel time on both ends. :class:`TurnCoalescingTransport` wraps a connection's transport and
collects what is written to it during one turn of the event loop; the collected bytes leave in
one ``write`` from a ``loop.call_soon`` callback, i.e. after the callbacks already scheduled and
before the loop next waits for I/O.

It depends on nothing inside uvicorn (the h11 and httptools protocols of every supported version
only call ``write``), and the order of bytes never changes. ``close`` and ``write_eof`` send what
is pending first; ``abort`` drops it, as the transport's own ``abort`` drops its buffer. More than
``FLUSH_AT`` bytes pending are sent at once, so a response streamed without yielding never grows
a buffer here, and the transport's flow control (``pause_writing``) sees every byte as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

#: Pending bytes that are sent at once rather than at the end of the turn.
FLUSH_AT = 64 * 1024


class TurnCoalescingTransport(asyncio.Transport):
    """A transport proxy: writes made in one event-loop turn go out in one ``write``."""

    __slots__ = ("_loop", "_pending", "_size", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] | None = None
        self._size = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        chunk = data if type(data) is bytes else bytes(data)  # the caller may reuse a buffer
        pending = self._pending
        if pending is None:
            self._pending = [chunk]
            self._size = len(chunk)
            self._loop.call_soon(self.flush)
        else:
            pending.append(chunk)
            self._size += len(chunk)
        if self._size > FLUSH_AT:
            self.flush()

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        for data in list_of_data:
            self.write(data)

    def flush(self) -> None:
        """Send what is pending now (called at the start of the next turn)."""
        pending = self._pending
        if pending is None:
            return
        self._pending = None
        self._size = 0
        if not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._pending = None
        self._size = 0
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + self._size

    # Everything else as the transport has it.

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()
