"""Connection flood: authenticated throughput with thousands of idle connections open.

The rollout server runs in a subprocess (``serve``, ``api_key`` set, a backend that finishes at
once). This process measures authenticated no-op rollouts per second (``POST /rollout`` then
``GET /rollout/{id}/result``, 32 keep-alive connections) first alone, then with ``--idle``
(2,000) idle connections opened to the server beforehand; fresh connections are also opened for
each level so new clients are measured, not only established ones. Each scenario runs with the
machine's descriptor limit and with the server's limit lowered to 1,024 (Linux's usual default),
guarded (as ``serve`` runs) and unguarded (``http="auto"``, uvicorn's stock protocol: no
header-read timeout, no connection cap).

Figures: rollouts/s, failed requests (timeouts included, 5 s each), idle connections the server
closed. Prints figures only; never asserts.

    uv run python benchmarks/connection_flood.py
    uv run python benchmarks/connection_flood.py --idle 4000 --rollouts 3000
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import resource
import select
import socket
import subprocess
import sys
import time
from typing import Any

SERVER = """
import resource, sys
limit = int(sys.argv[1])
if limit:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(limit, hard), hard))
from osmosis_ai.rollout.backend.base import ExecutionBackend
from osmosis_ai.rollout.server import create_rollout_server, serve
from osmosis_ai.rollout.types import ExecutionOutcome, ExecutionResult, RolloutSample, RolloutStatus

class Done(ExecutionBackend):
    async def execute(self, request):
        sample = RolloutSample(messages=request.prompt, reward=1.0)
        return ExecutionOutcome(workflow=ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample))

app = create_rollout_server(backend=Done(), api_key="sek", save_trajectories=False)
options = {} if sys.argv[2] == "guarded" else {"http": "auto"}
serve(app, port=0, log_level="warning", **options)
"""
AUTH = "authorization: Bearer sek\r\n"
PROMPT = [{"role": "user", "content": "hi"}]


async def request(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: str, body: bytes = b""
) -> tuple[int, bytes]:
    writer.write(head.encode() + f"content-length: {len(body)}\r\n\r\n".encode() + body)
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
    return status, await reader.readexactly(length)


async def worker(port: int, ids: Any, counts: dict[str, int]) -> None:
    conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    for rollout_id in ids:
        try:
            async with asyncio.timeout(5):
                if conn is None:
                    conn = await asyncio.open_connection("127.0.0.1", port)
                payload = {
                    "rollout_id": rollout_id,
                    "initial_messages": PROMPT,
                    "chat_completions_url": "http://127.0.0.1:9/v1",
                    "grade": False,
                }
                head = (
                    f"POST /rollout HTTP/1.1\r\nhost: x\r\n{AUTH}content-type: application/json\r\n"
                )
                status, raw = await request(*conn, head, json.dumps(payload).encode())
                if status != 202:
                    raise RuntimeError(status)
                lease = json.loads(raw)["polling_lease_token"]
                while True:
                    head = (
                        f"GET /rollout/{rollout_id}/result HTTP/1.1\r\nhost: x\r\n{AUTH}"
                        f"x-osmosis-rollout-lease: {lease}\r\n"
                    )
                    status, raw = await request(*conn, head)
                    if status != 200:
                        raise RuntimeError(status)
                    if json.loads(raw)["status"] in ("success", "failure", "cancelled"):
                        break
            counts["ok"] += 1
        except Exception:
            counts["failed"] += 1
            if conn is not None:
                conn[1].close()
            conn = None
    if conn is not None:
        conn[1].close()


async def throughput(port: int, prefix: str, n: int, concurrency: int) -> tuple[float, int]:
    counts = {"ok": 0, "failed": 0}
    ids = iter(f"{prefix}-{i}" for i in range(n))
    started = time.perf_counter()
    await asyncio.gather(*(worker(port, ids, counts) for _ in range(concurrency)))
    return counts["ok"] / (time.perf_counter() - started), counts["failed"]


def closed_count(sockets: list[socket.socket]) -> int:
    poller = select.poll()  # select() cannot watch descriptors above 1,023
    by_fd = {sock.fileno(): sock for sock in sockets}
    for fd in by_fd:
        poller.register(fd, select.POLLIN)
    closed = 0
    for fd, _ in poller.poll(500):
        with contextlib.suppress(OSError):
            if by_fd[fd].recv(1) == b"":
                closed += 1
    return closed


async def scenario(fd_limit: int, mode: str, idle_count: int, n: int) -> None:
    process = subprocess.Popen(  # noqa: ASYNC220 - read line by line below, then killed
        [sys.executable, "-c", SERVER, str(fd_limit), mode], stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    try:
        port = 0
        while not port:
            line = process.stderr.readline()
            if not line:
                raise RuntimeError("the server exited during start-up")
            if match := re.search(r"listening on http://127\.0\.0\.1:(\d+)", line):
                port = int(match.group(1))
        await throughput(port, "warmup", 200, 8)
        alone, alone_failed = await throughput(port, "alone", n, 32)
        idle = []
        for _ in range(idle_count):
            with contextlib.suppress(OSError):
                idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        flooded, flooded_failed = await throughput(port, "flood", n, 32)
        closed = closed_count(idle)
        for sock in idle:
            sock.close()
        limit = f"server fd limit {fd_limit}" if fd_limit else "machine fd limit"
        print(
            f"{mode:9} {limit:22} alone {alone:6.0f} rollouts/s (failed {alone_failed})  "
            f"with {len(idle)} idle connections {flooded:6.0f} rollouts/s "
            f"(failed {flooded_failed}); idle connections closed by the server: {closed}",
            flush=True,
        )
    finally:
        process.kill()
        process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--idle", type=int, default=2000)
    parser.add_argument("--rollouts", type=int, default=2000)
    parser.add_argument("--modes", default="unguarded,guarded")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = args.idle + 512
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    print(
        f"connection flood benchmark: python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"{args.idle} idle connections, {args.rollouts} rollouts per measurement, C=32",
        flush=True,
    )
    for fd_limit in (0, 1024):
        for mode in args.modes.split(","):
            asyncio.run(scenario(fd_limit, mode.strip(), args.idle, args.rollouts))


if __name__ == "__main__":
    main()
