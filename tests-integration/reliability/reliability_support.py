"""Helpers for the reliability tests: a rollout server in a child process on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import httpx

SERVER_MAIN = Path(__file__).with_name("server_main.py")
LEASE = "X-Osmosis-Rollout-Lease"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def body(rollout_id: str, seconds: float = 0.0) -> dict[str, Any]:
    return {
        "rollout_id": rollout_id,
        "initial_messages": [{"role": "user", "content": "hi"}],
        "chat_completions_url": "http://127.0.0.1:9/v1",
        "metadata": {"seconds": seconds},
    }


class ServerProcess:
    """One ``server_main.py`` child; :meth:`start` returns once ``/health`` answers."""

    def __init__(
        self, port: int, outbox: Path, grace: float, options: dict[str, Any] | None = None
    ) -> None:
        self.port, self.outbox, self.grace = port, outbox, grace
        self.options = options or {}
        self.url = f"http://127.0.0.1:{port}"
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(SERVER_MAIN),
            str(self.port),
            str(self.outbox),
            str(self.grace),
            json.dumps(self.options),
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        async with httpx.AsyncClient(base_url=self.url) as client:
            for _ in range(400):  # up to ~20 s: the child imports, then listens
                if self.process.returncode is not None:
                    raise RuntimeError(f"server exited with {self.process.returncode}")
                try:
                    if (await client.get("/health")).status_code == 200:
                        return
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
        raise RuntimeError("server did not start")

    def signal(self, sig: int) -> None:
        assert self.process is not None
        self.process.send_signal(sig)

    async def kill(self) -> None:
        """``kill -9``: nothing runs after it."""
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)
            await self.process.wait()

    async def wait(self) -> int:
        assert self.process is not None
        async with asyncio.timeout(30):
            return await self.process.wait()
