"""Serve an ASGI app with real uvicorn on a free 127.0.0.1 port inside the test's event loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.started_event = asyncio.Event()

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets=sockets)
        self.started_event.set()

    def install_signal_handlers(self) -> None:  # leave the test runner's handlers alone
        return None


@asynccontextmanager
async def serve(app: Any) -> AsyncIterator[str]:
    """Yield the base URL of ``app`` served on loopback; drain and stop it on exit."""
    server = _Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    task = asyncio.create_task(server.serve())
    started = asyncio.create_task(server.started_event.wait())
    done, _ = await asyncio.wait({task, started}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
    if started not in done:
        started.cancel()
        server.should_exit = True
        await task
        raise RuntimeError("uvicorn did not start within 10 s")
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
