"""Framing between the server and a worker: a 4-byte length, then one pickled tuple.

Messages (server to worker): ``("run", id, ExecutionRequest)``, ``("cancel", id)``,
``("ping", n)``, ``("stop",)``. Worker to server: ``("ready", pid)``, ``("error", message)``,
``("status", id, status)``, ``("done", id, ExecutionOutcome | None)``, ``("pong", n)``.
The two ends are a private socket pair, so requests (which carry the policy key) never touch
disk or the network.
"""

from __future__ import annotations

import asyncio
import pickle
import struct
from typing import Any

_HEADER = struct.Struct("!I")


def encode(message: tuple[Any, ...]) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(body)) + body


async def receive(reader: asyncio.StreamReader) -> tuple[Any, ...]:
    """The next message; ``asyncio.IncompleteReadError`` when the other end has gone."""
    (size,) = _HEADER.unpack(await reader.readexactly(_HEADER.size))
    return pickle.loads(await reader.readexactly(size))
