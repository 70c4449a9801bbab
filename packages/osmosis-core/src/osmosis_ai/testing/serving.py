"""``serve_app``: run an ASGI app (such as your rollout server) under real uvicorn in a test.

::

    from osmosis_ai.rollout.server import create_rollout_server
    from osmosis_ai.testing import serve_app

    async with serve_app(create_rollout_server(backend=backend)) as base_url:
        async with httpx.AsyncClient(base_url=base_url) as client:
            ...

The app is served on ``127.0.0.1`` (a free port unless ``port=`` is given) inside the caller's
event loop, with its lifespan run and the settings of :func:`osmosis_ai.rollout.server.serve`
(keep-alive, connection bounds), so a test exercises the same HTTP stack a controller talks to. On exit the server is asked to stop and its lifespan shutdown (drain, outbox) completes
before the context manager returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

from osmosis_ai._util import serving as _serving
from osmosis_ai.rollout.server.serving import uvicorn_config


@asynccontextmanager
async def serve_app(
    app: Any,
    *,
    port: int = 0,
    lifespan: Literal["auto", "on", "off"] = "on",
    start_timeout_sec: float = 10.0,
    protocol_thread: bool = False,
    **uvicorn_options: Any,
) -> AsyncIterator[str]:
    """Serve ``app`` on ``127.0.0.1``; yield its base URL (``http://127.0.0.1:PORT``).

    ``protocol_thread=True`` (a rollout server app only) serves as ``serve(app)`` does in one
    process: HTTP and the server's bookkeeping in a thread with its own event loop, the
    rollouts (and the app's ``lifespan``) on the caller's loop, so a test can hold that loop
    and still talk to the server. Other keywords go to
    :func:`~osmosis_ai.rollout.server.serving.uvicorn_config` (for example
    ``header_timeout_sec=0.3`` to test a slow client, or ``max_connections``)."""
    uvicorn_options.setdefault("log_level", "warning")
    config = uvicorn_config(app, port=port, lifespan=lifespan, **uvicorn_options)
    if protocol_thread:
        async with _on_protocol_thread(app, config, start_timeout_sec) as url:
            yield url
        return
    server = _serving.uvicorn_server(config)
    task = await _serving.start(server, start_timeout_sec=start_timeout_sec)
    try:
        yield f"http://127.0.0.1:{server.port}"
    finally:
        await _serving.stop(server, task)


@asynccontextmanager
async def _on_protocol_thread(app: Any, config: Any, start_sec: float) -> AsyncIterator[str]:
    service = getattr(getattr(app, "state", None), "rollout_service", None)
    if service is None:
        raise ValueError(
            "protocol_thread=True needs the app returned by create_rollout_server(); "
            f"got {type(app).__name__}"
        )
    service.use_agent_loop(asyncio.get_running_loop())
    threaded = _serving.ThreadedServer(_serving.uvicorn_server(config, capture_signals=False))
    # Started and stopped from threads: the app's lifespan and shutdown run on this loop.
    await asyncio.to_thread(threaded.start, start_sec)
    try:
        yield f"http://127.0.0.1:{threaded.server.port}"
    finally:
        await asyncio.to_thread(threaded.stop, None)
