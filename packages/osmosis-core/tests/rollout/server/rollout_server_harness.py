"""Test harness: real servers on 127.0.0.1 and a programmable backend.

* :func:`serve_app` (re-exported from :mod:`osmosis_ai.testing`) runs an ASGI app under
  uvicorn on a free loopback port inside the test's event loop, lifespan included, and shuts
  it down (draining) on exit.
* :class:`FakeBackend` behaves per rollout according to ``metadata["mode"]``: succeed, block
  until released, raise, fail in the workflow or the grader, time out, produce odd samples...
* :class:`CallbackListener` is a real 0.3.0 controller endpoint that records callbacks and
  answers with scripted status codes.
"""

from __future__ import annotations

import asyncio
import math
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from osmosis_ai.rollout.backend.base import ExecutionBackend
from osmosis_ai.rollout.context import RolloutContext, RolloutProgress, rollout_context_for
from osmosis_ai.rollout.server import create_rollout_server
from osmosis_ai.rollout.server._impl.service import RolloutService
from osmosis_ai.rollout.types import (
    ExecutionOutcome,
    ExecutionRequest,
    ExecutionResult,
    RolloutErrorCategory,
    RolloutSample,
    RolloutStatus,
)
from osmosis_ai.testing import serve_app

LEASE = "X-Osmosis-Rollout-Lease"


@asynccontextmanager
async def running(
    backend: ExecutionBackend, **options: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, RolloutService]]:
    """A rollout server for ``backend`` on loopback and an httpx client bound to it."""
    options.setdefault("configure_logging", False)
    app = create_rollout_server(backend=backend, **options)
    async with serve_app(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as client:
        yield client, app.state.rollout_service


class ThreadedServer:
    """``app`` under uvicorn in a background thread (for synchronous callers such as
    hypothesis tests); ``url`` is its base URL."""

    def __init__(self, app: Any) -> None:
        self._app = app
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self.url = ""

    def _main(self) -> None:
        async def main() -> None:
            self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
            async with serve_app(self._app) as url:
                self.url = url
                self._started.set()
                await self._stop.wait()

        asyncio.run(main())

    def __enter__(self) -> ThreadedServer:
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("uvicorn did not start")
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(15)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def body(rollout_id: str | None = "r1", **fields: Any) -> dict[str, Any]:
    """A valid ``POST /rollout`` body."""
    payload: dict[str, Any] = {
        "initial_messages": [{"role": "user", "content": "What is 6 * 7?"}],
        "chat_completions_url": "http://127.0.0.1:9/v1/rollouts/r1",
        "label": "42",
    }
    if rollout_id is not None:
        payload["rollout_id"] = rollout_id
    payload.update(fields)
    return payload


async def final_result(client: httpx.AsyncClient, rollout_id: str, token: str) -> dict[str, Any]:
    """Long-poll ``GET /rollout/{id}/result`` until the rollout is terminal (at most 20 polls)."""
    for _ in range(20):
        response = await client.get(f"/rollout/{rollout_id}/result", headers={LEASE: token})
        assert response.status_code == 200, response.text
        result = response.json()
        if result["status"] in ("success", "failure", "cancelled"):
            return result
    raise AssertionError("rollout never finished")


@dataclass
class FakeBackend(ExecutionBackend):
    """Behaviour per rollout from ``metadata["mode"]`` (default ``success``)."""

    capacity: bool = True
    cancel_reply: dict[str, str] | None = None
    requests: list[ExecutionRequest] = field(default_factory=list)
    contexts: dict[str, tuple[str, str | None, str]] = field(default_factory=dict)
    gates: dict[str, asyncio.Event] = field(default_factory=dict)
    started: dict[str, asyncio.Event] = field(default_factory=dict)
    cancelled: set[str] = field(default_factory=set)
    shutdown_calls: int = 0

    def gate(self, rollout_id: str) -> asyncio.Event:
        return self.gates.setdefault(rollout_id, asyncio.Event())

    def started_event(self, rollout_id: str) -> asyncio.Event:
        return self.started.setdefault(rollout_id, asyncio.Event())

    def has_capacity(self) -> bool:
        return self.capacity

    def cancel_rollouts(
        self, ids: list[str] | None = None, prefix: str | None = None, all: bool = False
    ) -> dict[str, str]:
        return dict(self.cancel_reply or {})

    def health(self) -> dict[str, Any]:
        return {"status": "ok", "concurrency": {"max_concurrent": None, "queued": 0, "running": 0}}

    async def shutdown(self) -> None:
        self.shutdown_calls += 1

    async def execute(
        self, request: ExecutionRequest, progress: RolloutProgress | None = None
    ) -> ExecutionOutcome:
        with rollout_context_for(request, progress) as ctx:
            await ctx.set_status(RolloutStatus.RUNNING)
            return await self._run(request, ctx)

    async def _run(self, request: ExecutionRequest, ctx: RolloutContext) -> ExecutionOutcome:
        self.requests.append(request)
        self.contexts[request.id] = (ctx.chat_completions_url, ctx.api_key, ctx.rollout_id)
        self.started_event(request.id).set()
        metadata = request.metadata or {}
        mode = metadata.get("mode", "success")
        messages = [*request.prompt, {"role": "assistant", "content": "#### 42"}]
        try:
            if mode in ("block", "staged"):
                await self.gate(request.id).wait()
            if mode == "sleep":
                await asyncio.sleep(float(metadata.get("seconds", 0.2)))
        except asyncio.CancelledError:
            self.cancelled.add(request.id)
            raise
        if mode == "raise":
            raise RuntimeError("kaboom")
        if mode == "return_none":
            return None  # type: ignore[return-value]
        if mode == "workflow_error":
            return ExecutionOutcome(
                workflow=ExecutionResult(
                    status=RolloutStatus.FAILURE,
                    err_message="kaboom",
                    err_category=RolloutErrorCategory.AGENT_ERROR,
                )
            )
        if mode == "timeout":
            return ExecutionOutcome(
                workflow=ExecutionResult(
                    status=RolloutStatus.FAILURE,
                    err_message="workflow exceeded its 0.1s deadline",
                    err_category=RolloutErrorCategory.TIMEOUT,
                )
            )
        sample = RolloutSample(messages=messages, label=request.label)
        if mode == "nan_metrics":
            sample.metrics = {"x": math.nan, "y": 1}
        if mode == "unencodable":
            sample = RolloutSample(
                messages=[{"role": "assistant", "content": object()}], label=request.label
            )
        workflow = ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample)
        if not request.grade:
            return ExecutionOutcome(workflow=workflow)
        await ctx.set_status(RolloutStatus.GRADING)
        if mode == "staged":
            await self.gate(f"{request.id}:grading").wait()
        graded = sample.model_copy(deep=True)
        if mode == "grader_error":
            graded.reward = 1.0
            return ExecutionOutcome(
                workflow=workflow,
                grader=ExecutionResult(
                    status=RolloutStatus.FAILURE,
                    sample=graded,
                    err_message="bad label",
                    err_category=RolloutErrorCategory.VALIDATION_ERROR,
                ),
            )
        if mode == "remove_sample":
            graded.reward = 1.0
            graded.remove_sample = True
        else:
            graded.reward = float(metadata.get("reward", 1.0))
        return ExecutionOutcome(
            workflow=workflow, grader=ExecutionResult(status=RolloutStatus.SUCCESS, sample=graded)
        )


@dataclass
class Callback:
    kind: str
    rollout_id: str
    body: dict[str, Any]
    authorization: str | None


class CallbackListener:
    """A real callback endpoint: ``POST /cb/{kind}/{rollout_id}``.

    ``script[kind]`` is a list of status codes answered before the default 200 (one per call);
    ``ack`` is the JSON body of a 200 answer.
    """

    def __init__(self) -> None:
        self.calls: list[Callback] = []
        self.attempts: list[tuple[str, str, int]] = []
        self.script: dict[str, list[int]] = {}
        self.ack: dict[str, Any] = {"ok": True}
        self._arrived = asyncio.Event()
        self.app = Starlette(
            routes=[Route("/cb/{kind}/{rollout_id}", self._handle, methods=["POST"])]
        )

    def url(self, base: str, kind: str, rollout_id: str) -> str:
        return f"{base}/cb/{kind}/{rollout_id}"

    async def _handle(self, request: Request) -> Response:
        kind = request.path_params["kind"]
        rollout_id = request.path_params["rollout_id"]
        payload = await request.json()
        scripted = self.script.get(kind)
        status = scripted.pop(0) if scripted else 200
        self.attempts.append((kind, rollout_id, status))
        event, self._arrived = self._arrived, asyncio.Event()
        event.set()
        if status != 200:
            return JSONResponse({"detail": f"scripted {status}"}, status_code=status)
        self.calls.append(Callback(kind, rollout_id, payload, request.headers.get("authorization")))
        return JSONResponse(self.ack)

    async def wait_for(self, count: int, *, kind: str | None = None) -> list[Callback]:
        """Wait until ``count`` successful callbacks (of ``kind``) arrived. The 30 s bound only
        ends a failing test; 4 s was too short for a loaded machine."""
        async with asyncio.timeout(30.0):
            while True:
                matching = [c for c in self.calls if kind is None or c.kind == kind]
                if len(matching) >= count:
                    return matching
                await self._arrived.wait()


async def _listening_url(proc: asyncio.subprocess.Process) -> str:
    assert proc.stderr is not None
    while line := await proc.stderr.readline():
        text = line.decode()
        if "rollout server listening on " in text:
            return text.rsplit(" ", 1)[-1].strip()
    raise AssertionError("the server exited before listening")


@dataclass
class ScriptServer:
    """A server started as ``python SCRIPT``: its URL, process, and exit code once stopped."""

    url: str
    proc: asyncio.subprocess.Process
    code: int | None = None


@asynccontextmanager
async def script_server(script: Path, cwd: Path, **env: str) -> AsyncIterator[ScriptServer]:
    """Run ``python script`` (which calls ``serve(app)``) until it logs its URL; SIGTERM it on
    exit and record its exit code."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
        stderr=subprocess.PIPE,
        cwd=str(cwd),
    )
    drain: asyncio.Task[bytes] | None = None
    server = ScriptServer("", proc)
    try:
        async with asyncio.timeout(120):
            server.url = await _listening_url(proc)
        assert proc.stderr is not None
        drain = asyncio.create_task(proc.stderr.read())  # keep the pipe from filling up
        yield server
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(60):
            server.code = await proc.wait()
            if drain is not None:
                await drain
