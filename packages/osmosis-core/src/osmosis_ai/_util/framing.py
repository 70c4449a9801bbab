"""Messages between osmosis and the child processes it supervises: one JSON object per line.

The one framing of every control channel to a supervised child (the eval's policy-proxy process,
the rollout server's worker zygote): compact JSON, UTF-8, ``\\n``-terminated (JSON never
contains a raw newline). :func:`encode` / :func:`decode` one message; :class:`LineSplitter`
splits a byte stream read in arbitrary chunks (a socket); :func:`read_message` reads one from an
``asyncio.StreamReader`` (a pipe). The orphan rule for those children is
:func:`osmosis_ai._util.child_process.die_with_parent`.

The rollout workers' result channel is not a control channel: it carries pickled outcomes on the
server's hot path, length-prefixed (:mod:`osmosis_ai.rollout.server._impl.workers.channel`).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

__all__ = ["LineSplitter", "decode", "encode", "read_message"]

_encode = json.JSONEncoder(separators=(",", ":")).encode


def encode(message: Any) -> bytes:
    """One message as a line (compact JSON + ``\\n``)."""
    return _encode(message).encode() + b"\n"


def decode(line: bytes) -> Any:
    """The message of one line (its ``\\n`` may be there or not)."""
    return json.loads(line)


async def read_message(reader: asyncio.StreamReader) -> Any | None:
    """The next message, or ``None`` at the end of the stream."""
    line = await reader.readline()
    return decode(line) if line.strip() else None


class LineSplitter:
    """Messages out of a byte stream that arrives in chunks (a partial line waits for more)."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[Any]:
        *lines, self._buffer = (self._buffer + data).split(b"\n")
        return [decode(line) for line in lines if line.strip()]
