"""One ``write`` per small HTTP response: the status line and headers leave with the body.

uvicorn writes a response's head (status line and headers) and its body with two
``transport.write`` calls, and the transport sends each at once: two ``write`` syscalls and two
TCP segments per response, where the head is only ~115 bytes. A rollout takes two responses
(the 202 and the result), and on loopback each send costs as much kernel time as the work it
carries. :class:`HeadCoalescingTransport` wraps a connection's transport and holds back the
head of a response with a non-empty fixed-length body (``content-length`` > 0, not ``HEAD``: a
body write must follow, and the client can do nothing with the head alone) until that write,
which then sends both in one call.

Nothing else changes: every other write (chunked or streamed responses, empty bodies,
``100 Continue``, uvicorn's own error responses) passes straight through, and a held head is sent before the
transport closes, so a response whose app fails after its start message ends exactly as before.
"""

from __future__ import annotations

import asyncio
from typing import Any


class HeadCoalescingTransport:
    """A transport proxy for one uvicorn HTTP connection (``protocol`` owns ``cycle``)."""

    def __init__(self, transport: asyncio.Transport, protocol: Any) -> None:
        self._transport = transport
        self._protocol = protocol
        self._held: bytes | None = None
        self._headed: Any = None  # the response cycle whose head was last held

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._transport.write(held + data)
            return
        cycle = self._protocol.cycle
        if (
            cycle is not None
            and cycle is not self._headed
            and cycle.response_started
            and not cycle.response_complete
            and getattr(cycle, "chunked_encoding", None) is False  # has a content-length
            and cycle.expected_content_length > 0  # so a body write must follow
            and cycle.scope["method"] != "HEAD"  # (a HEAD response's body is never written)
        ):
            # The first write of this response since its start message: its head.
            self._headed = cycle
            self._held = bytes(data)
            return
        self._transport.write(data)

    def _release(self) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if not self._transport.is_closing():
                self._transport.write(held)

    def close(self) -> None:
        self._release()
        self._transport.close()

    def write_eof(self) -> None:
        self._release()
        self._transport.write_eof()

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    def get_write_buffer_size(self) -> int:
        held = self._held
        return self._transport.get_write_buffer_size() + (len(held) if held else 0)

    def __getattr__(self, name: str) -> Any:
        # Everything else (is_closing, get_extra_info, pause_reading, abort, ...) as it is.
        return getattr(self._transport, name)
