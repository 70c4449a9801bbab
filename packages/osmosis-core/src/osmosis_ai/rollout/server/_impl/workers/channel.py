"""Framing between the server and a worker: a 4-byte length, then one pickled list of messages.

Messages (server to worker): ``("run", id, ExecutionRequest)``, ``("cancel", id)``,
``("ping", n)``, ``("stop",)``. Worker to server: ``("ready", pid)``, ``("error", message)``,
``("status", id, status)``, ``("done", id, bytes | None)``, ``("pong", n)``. A ``done`` carries
its outcome already pickled (:func:`encode_outcome`): the server reads a frame of results
without decoding any of them, and decodes each when it takes it (a few per loop turn), so a
large frame never costs one long decode; one that cannot be decoded fails only its rollout.
The two ends are a private socket pair, so requests (which carry the policy key) never touch
disk or the network.

A :class:`Sender` batches: what one loop iteration sends goes out as one frame (one pickle, one
write) when the iteration ends, and a ``status`` superseded by its rollout's ``done`` in the
same batch is dropped, so a burst of rollouts costs the server a few frames, not a few per
rollout (unless ``keep_status``: with ownership telemetry on, the server records every status a
rollout entered, as 0.3.8 did).
"""

from __future__ import annotations

import asyncio
import pickle
import struct
from collections.abc import Callable
from typing import Any

_HEADER = struct.Struct("!I")
_PROTOCOL = pickle.HIGHEST_PROTOCOL


def encode(messages: list[tuple[Any, ...]]) -> bytes:
    body = pickle.dumps(messages, protocol=_PROTOCOL)
    return _HEADER.pack(len(body)) + body


def encode_outcome(outcome: Any) -> bytes:
    return pickle.dumps(outcome, protocol=_PROTOCOL)


def decode_outcome(blob: bytes) -> Any:
    return pickle.loads(blob)


async def receive(reader: asyncio.StreamReader) -> list[tuple[Any, ...]]:
    """The next batch of messages; ``asyncio.IncompleteReadError`` when the other end has gone."""
    (size,) = _HEADER.unpack(await reader.readexactly(_HEADER.size))
    return pickle.loads(await reader.readexactly(size))


class Sender:
    """Sends messages on ``writer`` in one frame per event-loop iteration.

    ``replace(message, error)`` is asked for a stand-in when one message does not pickle (a
    ``done`` whose outcome holds something unpicklable); ``None`` drops it.
    """

    def __init__(
        self,
        writer: asyncio.StreamWriter,
        replace: Callable[[tuple[Any, ...], Exception], tuple[Any, ...] | None] | None = None,
        *,
        keep_status: bool = False,
    ) -> None:
        self.writer = writer
        self.replace = replace
        self.keep_status = keep_status
        self._batch: list[tuple[Any, ...]] = []

    def send(self, message: tuple[Any, ...]) -> None:
        if not self._batch:
            asyncio.get_running_loop().call_soon(self.flush)
        self._batch.append(message)

    def flush(self) -> None:
        batch, self._batch = self._batch, []
        if not batch or self.writer.is_closing():
            return
        done = () if self.keep_status else {m[1] for m in batch if m[0] == "done"}
        if done:
            batch = [m for m in batch if m[0] != "status" or m[1] not in done]
        try:
            frame = encode(batch)
        except Exception:
            frame = encode([m for m in map(self._checked, batch) if m is not None])
        self.writer.write(frame)

    def _checked(self, message: tuple[Any, ...]) -> tuple[Any, ...] | None:
        try:
            pickle.dumps(message, protocol=_PROTOCOL)
        except Exception as exc:
            return self.replace(message, exc) if self.replace is not None else None
        return message
