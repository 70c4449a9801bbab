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
    **uvicorn_options: Any,
) -> AsyncIterator[str]:
    """Serve ``app`` on ``127.0.0.1``; yield its base URL (``http://127.0.0.1:PORT``).

    Other keywords go to :func:`~osmosis_ai.rollout.server.serving.uvicorn_config` (for
    example ``header_timeout_sec=0.3`` to test a slow client, or ``max_connections``)."""
    uvicorn_options.setdefault("log_level", "warning")
    config = uvicorn_config(app, port=port, lifespan=lifespan, **uvicorn_options)
    server = _serving.uvicorn_server(config)
    task = await _serving.start(server, start_timeout_sec=start_timeout_sec)
    try:
        yield f"http://127.0.0.1:{server.port}"
    finally:
        await _serving.stop(server, task)
