"""Rollout server benchmark: no-op rollouts at concurrency 1, 64 and 512, both protocols.

The server runs in a subprocess (``create_rollout_server`` + ``serve``) with a ``LocalBackend``
whose workflow returns at once and whose grader sets reward 1.0, so what is measured is the
server's own cost (admission, scheduling, the rollout context, polls or callbacks, result
encoding, trajectory writing). This process is the controller: a lean keep-alive HTTP/1.1
client (one connection per rollout in flight) for both protocols, plus a callback listener for
the 0.3.0 protocol. ``--backend bare`` swaps LocalBackend for a backend that returns a fixed
outcome, to show the server's share alone.

Figures printed per mode and concurrency: rollouts/s, server CPU ms per rollout (utime+stime
of the server process from /proc, so worker threads such as the trajectory writer count; read
when the server has gone idle before and after each level, so trajectory files still queued when
the last result arrived are billed to that level: the first figure in brackets is that share;
then the main thread's CPU, where the event loop runs, and the whole process's kernel CPU,
most of it creating trajectory files: its cost is the filesystem's, and on an ext4 disk it
varies several-fold with the disk's state; ``TMPDIR=/dev/shm`` puts the benchmark's
``OSMOSIS_HOME`` in memory and shows the server's cost without it),
p50/p99 admission latency (POST /rollout round trip), p50/p99 end-to-end latency (POST start to
final result), lost results, then peak RSS and RSS growth per 1,000 finished rollouts.
Admission percentiles leave out each connection's first rollout (the start-up burst of C
simultaneous POSTs).
Prints figures only; never asserts.

    uv run python benchmarks/server.py                 # defaults: N=1500 per level
    uv run python benchmarks/server.py -n 3000 --modes poll
    uv run python benchmarks/server.py -n 4000 --modes poll --levels 64 --keep-scratch
        # (repeated runs on an ext4 without a journal: remove the printed folders afterwards)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

LEVELS = (1, 64, 512)
TICKS = os.sysconf("SC_CLK_TCK")
CPU_STEPS = 4  # --agent-cpu-ms is spent in this many slices, one event-loop step each


def busy(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        sum(range(100))


# ---- the server process --------------------------------------------------------------------


def run_server(port: int, save_trajectories: bool, backend_kind: str, agent_sec: float) -> None:
    from osmosis_ai.rollout import (
        AgentWorkflow,
        AgentWorkflowConfig,
        AgentWorkflowContext,
        AgentWorkflowOutput,
        Grader,
        GraderContext,
        LocalBackend,
    )
    from osmosis_ai.rollout.server import create_rollout_server, serve

    cpu_sec = float(os.environ.get("BENCH_AGENT_CPU_MS", "0")) / 1000
    max_concurrency = int(os.environ.get("BENCH_MAX_CONCURRENCY", "0")) or None

    class NoOp(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            if agent_sec:  # agent time spent waiting (e.g. on the policy), 0.5-1.5x the mean
                await asyncio.sleep(agent_sec * random.uniform(0.5, 1.5))
            for _ in range(CPU_STEPS if cpu_sec else 0):  # pure-Python agent work
                busy(cpu_sec / CPU_STEPS)
                await asyncio.sleep(0)
            return AgentWorkflowOutput(
                messages=[*ctx.prompt, {"role": "assistant", "content": "#### 42"}]
            )

    class Full(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            ctx.set_reward(1.0)

    from osmosis_ai.rollout.backend.base import ExecutionBackend
    from osmosis_ai.rollout.types import (
        ExecutionOutcome,
        ExecutionRequest,
        ExecutionResult,
        RolloutSample,
        RolloutStatus,
    )

    class Bare(ExecutionBackend):
        """A fixed graded outcome: what is left is the server's own work."""

        async def execute(
            self, request: ExecutionRequest, progress: Any = None
        ) -> ExecutionOutcome:
            if agent_sec:
                await asyncio.sleep(agent_sec * random.uniform(0.5, 1.5))
            sample = RolloutSample(
                messages=[*request.prompt, {"role": "assistant", "content": "#### 42"}],
                label=request.label,
                reward=1.0,
            )
            result = ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample)
            return ExecutionOutcome(workflow=result, grader=result)

    backend: ExecutionBackend
    if backend_kind == "bare":
        backend = Bare()
    else:
        backend = LocalBackend(
            workflow=NoOp,
            workflow_config=AgentWorkflowConfig(name="noop"),
            grader=Full,
            max_concurrency=max_concurrency,
        )
    app = create_rollout_server(
        backend=backend,
        configure_logging=False,
        save_trajectories=save_trajectories,
        protocol_thread=os.environ.get("BENCH_ONE_LOOP") != "1",
    )
    profile_path = os.environ.get("OSMOSIS_BENCH_PROFILE")
    if not profile_path:
        serve(app, port=port, log_level="warning")
        return
    import cProfile

    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    try:
        serve(app, port=port, log_level="warning")
    finally:
        profiler.disable()
        profiler.dump_stats(profile_path)


# ---- measurement helpers -------------------------------------------------------------------


def _stat_fields(path: str) -> list[str]:
    """The fields of a ``/proc`` ``stat`` file after the command name (state, ppid, ...)."""
    return Path(path).read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    fields = _stat_fields(f"/proc/{pid}/stat")
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def cpu_parts(pid: int) -> tuple[float, float]:
    """(main-thread CPU, kernel CPU of the whole process) in seconds: the event loop runs on the
    main thread; the trajectory writer and the outbox run on others, and file creation is kernel
    time whose cost depends on the filesystem more than on osmosis."""
    main = _stat_fields(f"/proc/{pid}/task/{pid}/stat")
    whole = _stat_fields(f"/proc/{pid}/stat")
    return (int(main[11]) + int(main[12])) / TICKS, int(whole[12]) / TICKS


async def settled_cpu_seconds(pid: int, limit_sec: float = 60.0) -> float:
    """The server's CPU seconds once it has gone idle (no clock tick in 0.25 s), so work still
    queued when the last result arrived (trajectory files written on the writer thread) is billed
    to the rollouts that caused it, not to the next level or to nobody."""
    last = cpu_seconds(pid)
    deadline = time.monotonic() + limit_sec
    while time.monotonic() < deadline:
        await asyncio.sleep(0.25)
        now = cpu_seconds(pid)
        if now == last:
            break
        last = now
    return last


def filesystem_note(path: str) -> str | None:
    """A warning when ``path`` is on an ext4 file system without a journal, else ``None``.

    There, choosing an inode for a new file or folder skips, one by one and each with a
    buffer-cache lookup, every free inode of the block group deleted in the last 60 s (360 s
    while its inode-table block is dirty): ``recently_deleted()`` in the kernel's
    ``fs/ext4/ialloc.c``, used only when there is no journal. ``perf record -g`` of 8,000
    trajectory-shaped creations (folder, file, rename) right after deleting as many put 54% of
    the CPU under it. Each new trajectory then costs kernel time in proportion to what was
    deleted shortly before, not to what the server does.
    """
    real = os.path.realpath(path)
    best: tuple[str, str, str] | None = None
    with contextlib.suppress(OSError), open("/proc/self/mountinfo", encoding="utf-8") as lines:
        for line in lines:
            fields, _, tail = line.partition(" - ")
            mount_point = fields.split()[4]
            fs_type, source = [*tail.split(), "", ""][:2]
            inside = real == mount_point or real.startswith(mount_point.rstrip("/") + "/")
            if inside and (best is None or len(mount_point) > len(best[0])):
                best = (mount_point, fs_type, source)
    if best is None or best[1] != "ext4":
        return None
    device = os.path.basename(best[2])
    try:
        journals = os.listdir("/proc/fs/jbd2")
    except OSError:
        journals = []
    if any(name.startswith(f"{device}-") for name in journals):
        return None
    return (
        f"{best[0]} is ext4 without a journal ({device}): each new file or folder there costs "
        "kernel time in proportion to the files deleted there in the last 60-360 s (the "
        "previous run's clean-up included); --keep-scratch leaves them for a later clean-up"
    )


def file_cost_ms(parent: str, count: int = 1000) -> tuple[float, float]:
    """(CPU, kernel CPU) in ms of the file operations one trajectory costs the server (a folder,
    a temporary file with ~500 bytes, a rename), done ``count`` times under ``parent`` in this
    process: the filesystem's share of the server's figure, which on ext4 varies with the
    disk's state from one run to the next."""
    from osmosis_ai.atomic_file import write_atomic

    root = os.path.join(parent, "file-cost")
    os.mkdir(root)
    data = b"x" * 500
    before = os.times()
    for index in range(count):
        folder = os.path.join(root, f"rollout-{index:06d}")
        os.mkdir(folder)
        write_atomic(os.path.join(folder, "trajectory.json"), data)  # as the writer does
    after = os.times()
    # The files stay until the scratch folder goes, after the run: deleting them here would
    # slow the run's own file creation on an ext4 without a journal (see filesystem_note).
    kernel = after.system - before.system
    return 1000 * (after.user - before.user + kernel) / count, 1000 * kernel / count


def memory_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


PROMPT = [{"role": "user", "content": "What is 6 * 7?"}]


# ---- controllers ---------------------------------------------------------------------------


class Connection:
    """A minimal keep-alive HTTP/1.1 client connection (one request at a time).

    httpx costs about a millisecond of CPU per request; at 512 rollouts in flight the
    controller, not the server, would set the latencies measured. This costs a few percent of
    that, so admission and end-to-end figures are the server's.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(
        self, method: str, path: str, body: bytes = b"", headers: str = ""
    ) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        head = (
            f"{method} {path} HTTP/1.1\r\nhost: {self.host}\r\n{headers}"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        length = 0
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def admission_body(rollout_id: str, extra: dict[str, Any] | None = None) -> bytes:
    payload: dict[str, Any] = {
        "rollout_id": rollout_id,
        "initial_messages": PROMPT,
        "label": "42",
        "chat_completions_url": "http://127.0.0.1:9/v1",
    }
    if extra:
        payload.update(extra)
    return json.dumps(payload).encode()


async def run_workers(
    n: int, concurrency: int, one: Any, port: int
) -> tuple[float, list[float], list[float], int]:
    """Run ``one(connection, index)`` for ``n`` indexes on ``concurrency`` connections.

    Admission latencies of each worker's first rollout are left out: all workers start at
    once, so those ``concurrency`` requests arrive as one burst (ramp-up, not steady state).
    """
    admissions: list[float] = []
    latencies: list[float] = []
    lost = 0
    counter = iter(range(n))

    async def worker() -> None:
        nonlocal lost
        connection = Connection("127.0.0.1", port)
        first = True
        try:
            for index in counter:
                try:
                    outcome = await one(connection, index)
                except Exception:
                    lost += 1
                    connection.close()
                    connection = Connection("127.0.0.1", port)
                    continue
                if outcome is None:
                    lost += 1
                else:
                    if not first or concurrency == 1:
                        admissions.append(outcome[0])
                    latencies.append(outcome[1])
                first = False
        finally:
            connection.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started, admissions, latencies, lost


async def drive_poll(port: int, prefix: str, n: int, concurrency: int) -> dict[str, Any]:
    async def one(connection: Connection, index: int) -> tuple[float, float] | None:
        rollout_id = f"{prefix}-{index}"
        start = time.perf_counter()
        status, raw = await connection.request("POST", "/rollout", admission_body(rollout_id))
        admitted = time.perf_counter()
        if status != 202:
            return None
        lease = f"x-osmosis-rollout-lease: {json.loads(raw)['polling_lease_token']}\r\n"
        while True:
            status, raw = await connection.request(
                "GET", f"/rollout/{rollout_id}/result", headers=lease
            )
            result = json.loads(raw)
            if status != 200:
                return None
            if result["status"] in ("success", "failure", "cancelled"):
                break
        if result["status"] != "success" or result["sample"]["reward"] != 1.0:
            return None
        return admitted - start, time.perf_counter() - start

    elapsed, admissions, latencies, lost = await run_workers(n, concurrency, one, port)
    return {"elapsed": elapsed, "admissions": admissions, "latencies": latencies, "lost": lost}


async def drive_callbacks(port: int, prefix: str, n: int, concurrency: int) -> dict[str, Any]:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from osmosis_ai._util.serving import start, stop, uvicorn_config, uvicorn_server

    waiters: dict[str, asyncio.Future[dict[str, Any]]] = {}
    loop = asyncio.get_running_loop()

    async def grader(request: Request) -> Response:
        payload = json.loads(await request.body())
        future = waiters.get(request.path_params["rid"])
        if future is not None and not future.done():
            future.set_result(payload)
        return Response(b'{"ok":true}', media_type="application/json")

    async def completion(request: Request) -> Response:
        await request.body()
        return Response(b'{"ok":true}', media_type="application/json")

    listener = Starlette(
        routes=[
            Route("/cb/{rid}/completion", completion, methods=["POST"]),
            Route("/cb/{rid}/grader", grader, methods=["POST"]),
        ]
    )
    listen_port = free_port()
    server = uvicorn_server(
        uvicorn_config(listener, port=listen_port, log_level="warning", lifespan="off"),
        capture_signals=False,
    )
    serving = await start(server)
    base = f"http://127.0.0.1:{listen_port}"

    async def one(connection: Connection, index: int) -> tuple[float, float] | None:
        rollout_id = f"{prefix}-{index}"
        future = waiters[rollout_id] = loop.create_future()
        extra = {
            "completion_callback_url": f"{base}/cb/{rollout_id}/completion",
            "grader_callback_url": f"{base}/cb/{rollout_id}/grader",
            "controller_api_key": "bench",
        }
        start = time.perf_counter()
        status, _ = await connection.request("POST", "/rollout", admission_body(rollout_id, extra))
        admitted = time.perf_counter()
        if status != 202:
            return None
        try:
            payload = await asyncio.wait_for(future, 60)
        finally:
            waiters.pop(rollout_id, None)
        if payload.get("status") != "success":
            return None
        return admitted - start, time.perf_counter() - start

    elapsed, admissions, latencies, lost = await run_workers(n, concurrency, one, port)
    await stop(server, serving)
    return {"elapsed": elapsed, "admissions": admissions, "latencies": latencies, "lost": lost}


# ---- the benchmark -------------------------------------------------------------------------


async def wait_healthy(url: str, process: subprocess.Popen[bytes]) -> None:
    import httpx

    async with httpx.AsyncClient() as http:
        for _ in range(300):
            if process.poll() is not None:
                raise RuntimeError("the server process exited during start-up")
            try:
                if (await http.get(f"{url}/health")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.05)
    raise RuntimeError("the server did not become healthy")


async def bench_mode(
    mode: str,
    n: int,
    levels: Sequence[int],
    trajectories: bool,
    backend: str,
    agent_ms: int,
    keep_scratch: bool,
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    scratch = tempfile.mkdtemp(prefix="osmosis-bench-")
    try:
        # the server keeps its outbox beside the home (<home>.outbox): both inside scratch
        home = os.path.join(scratch, "home")
        env = {**os.environ, "OSMOSIS_HOME": home, "PYTHONUNBUFFERED": "1"}
        args = [sys.executable, __file__, "--serve", str(port), "--backend", backend]
        args += ["--agent-ms", str(agent_ms)]
        if not trajectories:
            args.append("--no-trajectories")
        else:
            note = filesystem_note(scratch)
            if note:
                print(f"{mode:8} note: {note}", flush=True)
            cpu, kernel = file_cost_ms(scratch)
            print(
                f"{mode:8} filesystem of the home: one trajectory file's folder, create and "
                f"rename cost {cpu:.3f} ms CPU here ({kernel:.3f} kernel), measured before the run",
                flush=True,
            )
        process = subprocess.Popen(args, env=env)  # noqa: ASYNC220 - polled via /proc, not awaited
        try:
            await wait_healthy(url, process)
            drive = drive_poll if mode == "poll" else drive_callbacks
            await drive(port, "warmup", 200, 32)  # imports, pools, caches
            rss_start = memory_kb(process.pid, "VmRSS")
            finished = 0
            for level in levels:
                count = n if level > 1 else max(n // 5, 100)
                cpu_before = await settled_cpu_seconds(process.pid)
                main_before, sys_before = cpu_parts(process.pid)
                figures = await drive(port, f"c{level}", count, level)
                at_last_result = cpu_seconds(process.pid) - cpu_before
                cpu = await settled_cpu_seconds(process.pid) - cpu_before
                main_after, sys_after = cpu_parts(process.pid)
                finished += count
                done = max(len(figures["latencies"]), 1)
                print(
                    f"{mode:8} C={level:<4} N={count:<5} "
                    f"{count / figures['elapsed']:7.0f} rollouts/s  "
                    f"server CPU {1000 * cpu / count:5.2f} ms/rollout "
                    f"({1000 * (cpu - at_last_result) / count:4.2f} after the last result; "
                    f"main thread {1000 * (main_after - main_before) / count:4.2f}, "
                    f"kernel {1000 * (sys_after - sys_before) / count:4.2f})  "
                    f"admission p50 {1000 * percentile(figures['admissions'], 0.5):6.1f} ms "
                    f"p90 {1000 * percentile(figures['admissions'], 0.9):6.1f} ms "
                    f"p99 {1000 * percentile(figures['admissions'], 0.99):6.1f} ms  "
                    f"e2e p50 {1000 * percentile(figures['latencies'], 0.5):6.1f} ms "
                    f"p99 {1000 * percentile(figures['latencies'], 0.99):6.1f} ms  "
                    f"lost {figures['lost']}" + ("" if done else " (no result)"),
                    flush=True,
                )
            # Steady state: the heap has grown to what the concurrency levels need; what grows
            # from here on is what retained results cost.
            steady_start = memory_kb(process.pid, "VmRSS")
            await drive(port, "steady", n, 64)
            finished += n
            rss_end = memory_kb(process.pid, "VmRSS")
            peak = memory_kb(process.pid, "VmHWM")
            growth = (rss_end - rss_start) / 1024 / (finished / 1000)
            steady = (rss_end - steady_start) / 1024 / (n / 1000)
            print(
                f"{mode:8} peak RSS {peak / 1024:.1f} MB; RSS growth per 1,000 finished "
                f"rollouts: {steady:.2f} MB at steady state ({n} more at C=64), {growth:.2f} MB "
                f"over the whole run ({finished} rollouts, all still retained); load average "
                f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}",
                flush=True,
            )
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(30)
    finally:
        if keep_scratch:
            print(f"{mode:8} kept the run's files in {scratch}: remove it later", flush=True)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("-n", type=int, default=1500, help="rollouts per level (C=1 runs N/5)")
    parser.add_argument("--modes", default="poll,callback", help="poll, callback or both")
    parser.add_argument("--levels", default=",".join(map(str, LEVELS)))
    parser.add_argument("--no-trajectories", action="store_true", help="skip ATIF writing")
    parser.add_argument("--backend", choices=("local", "bare"), default="local")
    parser.add_argument(
        "--agent-ms",
        type=int,
        default=0,
        help="mean agent time per rollout, spent awaiting (0 = no-op; each rollout draws "
        "0.5-1.5x the mean); with it, C rollouts are really in flight at once and admission "
        "is measured alongside them",
    )
    parser.add_argument(
        "--agent-cpu-ms",
        type=float,
        default=0,
        help=f"pure-Python CPU work per rollout, in {CPU_STEPS} event-loop steps (a CPU-bound "
        "agent sharing the loop with admission: single-process admission latency under load)",
    )
    parser.add_argument(
        "--max-concurrency",
        type=int,
        default=0,
        help="LocalBackend(max_concurrency=...) (0: none, the default)",
    )
    parser.add_argument(
        "--keep-scratch",
        action="store_true",
        help="leave the run's trajectory files (printed path) instead of deleting them at the "
        "end: on an ext4 without a journal the deletion slows the next run's file creation",
    )
    parser.add_argument(
        "--one-loop",
        action="store_true",
        help="create_rollout_server(protocol_thread=False): the protocol and the rollouts on "
        "one event loop (before the protocol thread)",
    )
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        with contextlib.suppress(KeyboardInterrupt):  # the benchmark stops it with SIGINT
            run_server(args.serve, not args.no_trajectories, args.backend, args.agent_ms / 1000)
        return
    os.environ["BENCH_AGENT_CPU_MS"] = str(args.agent_cpu_ms)  # read by the server process
    os.environ["BENCH_MAX_CONCURRENCY"] = str(args.max_concurrency)
    os.environ["BENCH_ONE_LOOP"] = "1" if args.one_loop else "0"
    levels = [int(x) for x in args.levels.split(",")]
    print(
        f"rollout server benchmark: python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"backend {args.backend}, trajectories {'off' if args.no_trajectories else 'on'}, "
        f"agent time {args.agent_ms} ms, agent CPU {args.agent_cpu_ms:g} ms, "
        f"max_concurrency {args.max_concurrency or 'none'}, load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}",
        flush=True,
    )
    for mode in args.modes.split(","):
        asyncio.run(
            bench_mode(
                mode.strip(),
                args.n,
                levels,
                not args.no_trajectories,
                args.backend,
                args.agent_ms,
                args.keep_scratch,
            )
        )


if __name__ == "__main__":
    main()
