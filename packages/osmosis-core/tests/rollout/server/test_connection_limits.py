"""Idle connections cannot lock out working clients: header-read timeout and a connection cap.

The flood test runs the server in a subprocess whose descriptor limit is 1,024 (Linux's usual
default), opens 1,100 idle connections to it and then serves authenticated traffic.
"""

from __future__ import annotations

import asyncio
import re
import select
import socket
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from urllib.parse import urlsplit

import httpx
import pytest

from osmosis_ai.rollout.client import RolloutClient
from osmosis_ai.rollout.server import create_rollout_server
from osmosis_ai.rollout.types import RolloutStatus
from osmosis_ai.testing import serve_app

from .rollout_server_harness import LEASE, FakeBackend, body

resource = pytest.importorskip("resource")

FLOOD = 1_100
SERVER_FD_LIMIT = 1_024

SERVER = textwrap.dedent(
    """
    import resource, sys
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(int(sys.argv[1]), hard), hard))

    from osmosis_ai.rollout.backend.base import ExecutionBackend
    from osmosis_ai.rollout.server import create_rollout_server, serve
    from osmosis_ai.rollout.types import (
        ExecutionOutcome, ExecutionResult, RolloutSample, RolloutStatus,
    )

    class Done(ExecutionBackend):
        async def execute(self, request):
            sample = RolloutSample(messages=request.prompt, reward=1.0)
            result = ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample)
            return ExecutionOutcome(workflow=result)

    app = create_rollout_server(backend=Done(), api_key="sek", save_trajectories=False)
    serve(app, port=0, log_level="warning")
    """
)


def _raise_own_fd_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            pytest.skip(f"the test needs {needed} file descriptors; the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


@asynccontextmanager
async def _server_process(fd_limit: int) -> AsyncIterator[int]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", SERVER, str(fd_limit), stderr=asyncio.subprocess.PIPE
    )
    assert process.stderr is not None
    try:
        port = None
        async with asyncio.timeout(30):
            while port is None:
                line = (await process.stderr.readline()).decode()
                assert line, "the server exited during start-up"
                if match := re.search(r"listening on http://127\.0\.0\.1:(\d+)", line):
                    port = int(match.group(1))
        yield port
    finally:
        with suppress(ProcessLookupError):
            process.kill()
        await process.wait()


def _closed_by_server(sockets: list[socket.socket], at_least: int) -> int:
    """How many of ``sockets`` the server closed (EOF readable), waiting up to 5 s for
    ``at_least`` of them."""
    poller = select.poll()  # select() cannot watch descriptors above 1,023
    by_fd = {sock.fileno(): sock for sock in sockets}
    for fd in by_fd:
        poller.register(fd, select.POLLIN)
    closed: set[int] = set()
    for _ in range(50):
        for fd, _event in poller.poll(100):
            with suppress(OSError):
                if by_fd[fd].recv(1) == b"":
                    closed.add(fd)
                    poller.unregister(fd)
        if len(closed) >= at_least:
            break
    return len(closed)


async def test_1100_idle_connections_do_not_block_authenticated_traffic() -> None:
    _raise_own_fd_limit(FLOOD + 300)
    async with asyncio.timeout(60), _server_process(SERVER_FD_LIMIT) as port:
        url = f"http://127.0.0.1:{port}"
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(FLOOD)]
        try:
            auth = {"authorization": "Bearer sek"}
            async with httpx.AsyncClient(base_url=url, timeout=10) as http:
                for _ in range(5):
                    health = await http.get("/health", headers=auth)
                    assert health.status_code == 200
                assert (await http.get("/health")).status_code == 401
            async with RolloutClient(url=url, api_key="sek") as client:
                result = await client.run_rollout(
                    [{"role": "user", "content": "hi"}], "http://127.0.0.1:9/v1", "r1", grade=False
                )
                assert result.status == RolloutStatus.SUCCESS
            # The cap (1,024 less 128 of headroom) was kept by closing the oldest idle ones.
            cap = SERVER_FD_LIMIT - SERVER_FD_LIMIT // 8
            assert _closed_by_server(idle, FLOOD - cap) >= FLOOD - cap
        finally:
            for sock in idle:
                sock.close()


async def test_a_connection_must_send_its_request_head_in_time() -> None:
    backend = FakeBackend()
    app = create_rollout_server(
        backend=backend,
        configure_logging=False,
        result_wait_timeout_sec=1.0,
        polling_lease_timeout_sec=5.0,
    )
    async with serve_app(app, header_timeout_sec=0.3) as url:
        port = urlsplit(url).port
        assert port is not None
        silent = await asyncio.open_connection("127.0.0.1", port)
        partial = await asyncio.open_connection("127.0.0.1", port)
        partial[1].write(b"GET /health HTTP/1.1\r\nhost: x\r\n")  # never finished
        async with asyncio.timeout(5):
            assert await silent[0].read() == b""
            assert await partial[0].read() == b""
        for _, writer in (silent, partial):
            writer.close()
        # A request being served is never cut, even a long poll longer than the head timeout.
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            admitted = await http.post("/rollout", json=body("r1", metadata={"mode": "block"}))
            token = admitted.json()["polling_lease_token"]
            await backend.started_event("r1").wait()
            poll = await http.get("/rollout/r1/result", headers={LEASE: token})
            assert poll.status_code == 200
            assert poll.json()["status"] == "running"
            backend.gate("r1").set()


def test_cap_and_timeout_are_validated() -> None:
    from osmosis_ai.rollout.server._impl.connections import guarded_protocol

    with pytest.raises(ValueError, match="header_timeout_sec must be greater than zero"):
        guarded_protocol(header_timeout_sec=0)
    with pytest.raises(ValueError, match="max_connections must be at least 1"):
        guarded_protocol(max_connections=0)
