"""Worker-process benchmark: admission latency, CPU-bound scaling and IPC cost, one process vs
``serve(app, workers=N)``, all in one run.

The server runs in a subprocess (``benchmarks/worker_apps.py``: a module-level ``app`` that
worker processes rebuild by importing that file, as they would a user's ``main.py``). The
scripted ``multiply`` policy runs in a process of its own (``python -m
osmosis_ai.testing.policy_server``, answering instantly); the controller is
``benchmarks/server.py``'s lean keep-alive poll-protocol client (0.3.8 protocol: ``POST
/rollout``, then ``GET /rollout/{id}/result`` long polls), in this process. Every rollout must
end ``success`` with reward 1.0, or it counts as lost.

Apps:

* ``noop``: the workflow returns at once (LocalBackend, grader sets 1.0): the server's own cost;
* ``strands``: the public SDK's Strands template (``OsmosisStrandsAgent`` with the ``multiply``
  tool, ``OsmosisRolloutModel``), two policy calls per rollout, as in ``benchmarks/strands.py``;
* ``openai-agents``: the OpenAI Agents template (``OsmosisAgent``, ``Runner.run``), as in
  ``benchmarks/openai_agents.py``;
* ``cpu``: ``--cpu-ms`` (5, then 20) ms of pure-Python work, then one policy call;
* ``bare``: a backend returning a fixed graded outcome (nothing runs): with one worker, the
  server-process CPU over the in-process figure is the IPC cost of a rollout through a worker.

Modes: ``1 process`` (``workers=1``, rollouts on the server's loop) and ``N workers`` (a pool of
N worker processes; ``1 worker`` is a pool of one, which ``serve`` never makes by itself).

Sections (``--sections``, default all three):

* ``admission``: noop, strands, openai-agents at ``--concurrency`` (512), ``--modes`` (one
  process, then 2 workers): admission p50/p90/p99, the ``POST /rollout`` round trip (the first
  rollout of each connection, the start-up burst, is left out);
* ``cpu``: the cpu app with a pool of 1 and of 2 workers, the ratio, the best ratio this machine
  allows (every process shares its 2 cores) and the N-core extrapolation;
* ``ipc``: the bare app, 1 process vs a pool of 1: server CPU per rollout and the difference.

Per run: rollouts/s; CPU ms per rollout of the server process (read once it has gone idle, so
trajectory files still queued at the last result count), the workers (sum), the controller
(this process) and the policy process; ``busy`` = all of that CPU while the rollouts ran / wall time, in cores (2.0 =
this 2-core machine is saturated) and the server process's share of one core (near 100%, the
server is the bottleneck and admission waits in its queue: concurrency / request rate, by
Little's law, however fast each request is); the server's and each worker's RSS; and, measured inside the
server process, how late its event loop ran (a probe every 2 ms) and its GC pauses (each
full collection: the objects it traversed, their commonest types, its CPU time), and what the
collector tracks after the run. Late probes
while the server uses little CPU and no GC ran mean the OS did not schedule it (a busy machine).
The controller's own loop lateness is measured the same way: small, it is not what the admission
figures measure (with no-op rollouts it stays a few ms at p99 while admission is tens of ms).
Only the no-op admission runs: ``--sections admission --apps noop --modes 2``.
``--saturate-policy``: the rollouts reach the policy through ``benchmarks/slow_accept.py`` (a
listen backlog of ``--backlog`` connections; its accept loop stops for ``--stall-ms`` of every
``--stall-every-ms``, longer than the clients' default 5 s connect timeout, which is used) so new
policy connections queue, are refused by the kernel (the listen-queue overflows are printed)
and time out: every rollout must still succeed (``lost 0``). Each row prints the load average at its start.
Prints figures only; never asserts. Figures are only comparable on an otherwise idle machine:
the load average is printed at start and end.

    uv run python benchmarks/workers.py                       # everything, ~4-5 min
    uv run python benchmarks/workers.py --sections admission --apps strands,openai-agents \
        --modes 0,2 --saturate-policy                         # the tail, policy saturated
    uv run python benchmarks/workers.py --sections cpu --cpu-ms 5 --cpu-n 3000
    BENCH_PROFILE=/tmp/server.prof uv run python benchmarks/workers.py --sections admission \
        --apps strands --modes 2                              # cProfile of the server process
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scripted_policy import start_scripted_policy

_HERE = Path(__file__).resolve().parent
PROMPT = [{"role": "user", "content": "What is 6 times 7?"}]
LABEL = "42"


def _load_base() -> Any:
    """``benchmarks/server.py`` (the controller and /proc helpers), loaded by path."""
    return _load("server")


@functools.cache
def _load(name: str) -> Any:
    """``benchmarks/<name>.py``, loaded by path (once)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_bench_{name}", _HERE / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the controller (this process) -------------------------------------------------------------


async def wait_healthy(url: str, process: subprocess.Popen[bytes]) -> dict[str, Any]:
    """``/health`` once the server answers (workers import the app first: be patient)."""
    import httpx

    async with httpx.AsyncClient() as http:
        for _ in range(1200):
            if process.poll() is not None:
                raise RuntimeError("the server process exited during start-up")
            with contextlib.suppress(httpx.TransportError):
                response = await http.get(f"{url}/health")
                if response.status_code == 200:
                    return response.json()
            await asyncio.sleep(0.1)
    raise RuntimeError("the server did not become healthy in 120 s")


async def drive(
    base: Any, port: int, prefix: str, n: int, concurrency: int, policy: str, why: Any = None
) -> Any:
    """``n`` rollouts at ``concurrency``; ``why`` (a Counter) counts the reasons rollouts were lost."""

    def lost(reason: str) -> None:
        if why is not None:
            why[reason[:160]] += 1

    async def one(connection: Any, index: int) -> tuple[float, float] | None:
        rollout_id = f"{prefix}-{index}"
        body = json.dumps(
            {
                "rollout_id": rollout_id,
                "initial_messages": PROMPT,
                "label": LABEL,
                "chat_completions_url": policy,
                "llm_api_key": "bench",
            }
        ).encode()
        start = time.perf_counter()
        status, raw = await connection.request("POST", "/rollout", body)
        admitted = time.perf_counter()
        if status != 202:
            lost(f"POST /rollout {status}")
            return None
        lease = f"x-osmosis-rollout-lease: {json.loads(raw)['polling_lease_token']}\r\n"
        while True:
            status, raw = await connection.request(
                "GET", f"/rollout/{rollout_id}/result", headers=lease
            )
            if status != 200:
                lost(f"GET result {status}")
                return None
            result = json.loads(raw)
            if result["status"] in ("success", "failure", "cancelled"):
                break
        if result["status"] != "success" or result["sample"]["reward"] != 1.0:
            lost(
                f"{result['status']} {result.get('err_category')}: {result.get('err_message')}"
                if result["status"] != "success"
                else f"reward {result['sample']['reward']}"
            )
            return None
        return admitted - start, time.perf_counter() - start

    return await base.run_workers(n, concurrency, one, port)


def listen_overflows() -> int:
    """The kernel's count of handshakes refused because a listen queue was full (machine-wide:
    ``TcpExtListenOverflows``)."""
    lines = Path("/proc/net/netstat").read_text().splitlines()
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            row = dict(zip(names.split()[1:], values.split()[1:], strict=True))
            return int(row.get("ListenOverflows", 0))
    return 0


def _mode(workers: int | str) -> str:
    if workers == "t":
        return "thread"
    if workers in (0, "0"):
        return "1 process"
    return f"{workers} worker{'s' if int(workers) > 1 else ''}"


#: ``serve()``'s protocol for each one-process mode: ``0`` is its default for a plain app, a
#: protocol process (this benchmark wraps the app with its monitor, which ``auto`` would take
#: for a caller's own wrapper and keep the thread for); ``t`` is the protocol thread.
_PROTOCOL = {"0": "process", "t": "thread"}


async def bench(
    base: Any, kind: str, workers: int | str, n: int, concurrency: int, policy: tuple[int, str]
) -> dict[str, Any]:
    """One server, one app, one mode: warm up, then ``n`` rollouts at ``concurrency``."""
    import httpx

    protocol = _PROTOCOL.get(str(workers))

    port = base.free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="osmosis-bench-") as scratch:
        # the server keeps its outbox beside the home (<home>.outbox): both inside scratch
        home = os.path.join(scratch, "home")
        env = {
            **os.environ,
            "OSMOSIS_HOME": home,
            "BENCH_APP": kind,
            "BENCH_PORT": str(port),
            "BENCH_WORKERS": "0" if protocol else str(workers),
        }
        if protocol:
            env["OSMOSIS_ROLLOUT_PROTOCOL"] = protocol
        script = str(_HERE / "worker_apps.py")
        process = subprocess.Popen([sys.executable, script], env=env)  # noqa: ASYNC220
        try:
            health = await wait_healthy(url, process)
            pids = [w["pid"] for w in health.get("workers", [])]
            # The protocol process of serve(): counted with the server (the process started).
            split = [health["protocol"]["pid"]] if "protocol" in health else []
            await drive(base, port, "warmup", min(n, 200), 32, policy[1])

            def cpu() -> list[float]:
                return [
                    base.cpu_seconds(process.pid) + sum(base.cpu_seconds(p) for p in split),
                    sum(base.cpu_seconds(pid) for pid in pids),
                    time.process_time(),
                    base.cpu_seconds(policy[0]),
                ]

            async with httpx.AsyncClient() as http:
                await http.post(f"{url}/bench/stalls")
            # The controller's own loop lateness: a late controller would inflate admission.
            controller = _load("worker_apps").StallMonitor()
            controller.start(asyncio.get_running_loop())
            writer = split[0] if split else process.pid  # where the service writes trajectories
            await base.settled_cpu_seconds(writer)  # the warm-up's trajectories written
            before = cpu()
            overflows = listen_overflows()
            load = os.getloadavg()
            why: collections.Counter[str] = collections.Counter()
            try:
                elapsed, admissions, _latencies, lost = await drive(
                    base, port, "run", n, concurrency, policy[1], why
                )
            finally:
                controller.stop()
            window = [a - b for a, b in zip(cpu(), before, strict=True)]
            await base.settled_cpu_seconds(writer)  # this run's trajectories written
            spent = [a - b for a, b in zip(cpu(), before, strict=True)]
            async with httpx.AsyncClient() as http:
                stalls = (await http.get(f"{url}/bench/stalls")).json()
                heap = (await http.get(f"{url}/bench/heap")).json()
            return {
                "load": load,
                "overflows": listen_overflows() - overflows,
                "kind": kind,
                "workers": workers,
                "n": n,
                "c": concurrency,
                "rate": n / elapsed,
                "admissions": admissions,
                "cpu_ms": [1000 * s / n for s in spent],
                "busy": sum(window) / elapsed,  # CPU while rollouts ran, in cores
                "server_share": window[0] / elapsed,
                "lost": lost,
                "lost_why": why.most_common(3),
                "rss": sum(base.memory_kb(p, "VmRSS") for p in [process.pid, *split]) / 1024,
                "worker_rss": [base.memory_kb(pid, "VmRSS") / 1024 for pid in pids],
                "stalls": stalls,
                "heap": heap,
                "controller_lag": controller.summary(),
            }
        finally:
            # uvicorn re-raises SIGTERM after draining (no `finally` runs); SIGINT ends the
            # process through KeyboardInterrupt, so a profile gets written.
            process.send_signal(
                signal.SIGINT if os.environ.get("BENCH_PROFILE") else signal.SIGTERM
            )
            process.wait(120)


def show(base: Any, row: dict[str, Any]) -> None:
    def ms(q: float) -> str:
        return f"{1000 * base.percentile(row['admissions'], q):7.1f}"

    server, workers, controller, policy = row["cpu_ms"]
    worker_rss = ", ".join(f"{r:.0f}" for r in row["worker_rss"])
    print(
        f"  {row['kind']:13} {_mode(row['workers']):9} C={row['c']:<3} N={row['n']:<5} "
        f"{row['rate']:6.0f}/s  admission p50 {ms(0.5)} p90 {ms(0.9)} p99 {ms(0.99)} ms  "
        f"CPU ms/rollout: server {server:5.2f} workers {workers:5.2f} controller "
        f"{controller:4.2f} policy {policy:4.2f}  busy {row['busy']:.2f} cores (server "
        f"{100 * row['server_share']:.0f}% of one)  lost "
        f"{row['lost']}  RSS MB: server {row['rss']:.0f}"
        + (f", workers {worker_rss}" if worker_rss else "")
        + f"  load {row['load'][0]:.2f}",
        flush=True,
    )
    if row["overflows"]:
        print(f"  {'':23} listen-queue overflows (refused handshakes): {row['overflows']}")
    for reason, count in row["lost_why"]:
        print(f"  {'':23} lost {count}: {reason}", flush=True)
    st = row["stalls"]
    print(
        f"  {'':23} server loop lag p50 {1000 * st['lag_p50']:.1f} p99 "
        f"{1000 * st['lag_p99']:.1f} max {1000 * st['lag_max']:.1f} ms ({st['late_10ms']} "
        f"probes > 10 ms); GC {st['gc_n']} runs ({st['gc2_n']} full), {1000 * st['gc_total']:.0f} "
        f"ms in all, longest {1000 * st['gc_max']:.1f} ms; controller loop lag p99 "
        f"{1000 * row['controller_lag']['lag_p99']:.1f} max "
        f"{1000 * row['controller_lag']['lag_max']:.1f} ms",
        flush=True,
    )
    full = "; ".join(
        f"{n} objects {1000 * s:.1f} ms, {freed} freed ({', '.join(f'{t} {c}' for t, c in kinds)})"
        for n, s, freed, kinds in st["gc2"]
    )
    heap = row["heap"]
    print(
        f"  {'':23} full GCs: {full or 'none'}; after the run the collector tracks "
        f"{sum(heap['generations'])} objects (generations {heap['generations']}, "
        f"{heap['frozen']} frozen): " + ", ".join(f"{name} {n}" for name, n in heap["types"]),
        flush=True,
    )


async def cpu_section(base: Any, args: argparse.Namespace, policy: Any, cpu_ms: str) -> None:
    print(f"CPU-bound ({cpu_ms} ms of pure Python + one policy call), pool of 1 vs 2:", flush=True)
    rows = []
    for workers in (1, 2):
        rows.append(await bench(base, "cpu", workers, args.cpu_n, args.cpu_c, policy))
        show(base, rows[-1])
    one, two = rows
    w = two["cpu_ms"][1]
    outside = sum(two["cpu_ms"]) - w
    # Every process shares this machine's 2 cores. With 1 worker the rate is at most 1/w (one
    # core of agent work) and with 2 at most 2/(w + outside) (both cores, everything on them),
    # so the best ratio here is 2w / (w + outside) (1 when w < outside). On an N-core rollout
    # node the controller and policy run elsewhere: N workers give about N/w rollouts/s until
    # the server process (1/server ms per rollout) is the limit.
    bound = max(1.0, 2 * w / max(w + outside, 1e-9))
    server = two["cpu_ms"][0]
    print(
        f"  2 workers / 1 worker: {two['rate'] / one['rate']:.2f}x. Per rollout: workers {w:.2f} "
        f"ms CPU, everything else (server, controller, policy) {outside:.2f} ms; sharing 2 cores "
        f"that allows at most {bound:.2f}x here. N cores with the controller and policy "
        f"elsewhere: ~{1000 / max(w, 1e-9):.0f} rollouts/s per worker, up to the server "
        f"process's ceiling of ~{1000 / max(server, 1e-9):.0f}/s ({server:.2f} ms each)",
        flush=True,
    )


async def main_async(args: argparse.Namespace) -> None:
    base = _load_base()
    sections = set(args.sections.split(","))
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    policy_process, policy_url = start_scripted_policy("multiply")
    front: subprocess.Popen[str] | None = None
    if args.saturate_policy:
        # The rollouts reach the policy through a front whose accept queue is saturated.
        front = subprocess.Popen(  # noqa: ASYNC220
            [
                sys.executable,
                str(_HERE / "slow_accept.py"),
                policy_url,
                "--backlog",
                str(args.backlog),
                "--accept-delay-ms",
                str(args.accept_delay_ms),
                "--stall-ms",
                str(args.stall_ms),
                "--stall-every-ms",
                str(args.stall_every_ms),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert front.stdout is not None
        policy_url = front.stdout.readline().strip()
        os.environ["BENCH_POLICY_TIMEOUT"] = "default"  # openai's 5 s connect timeout
        print(
            f"policy behind a saturated accept queue: backlog {args.backlog}, accept loop "
            f"stalled {args.stall_ms:g} ms of every {args.stall_every_ms:g} ms, "
            f"{args.accept_delay_ms:g} ms per accept otherwise; the clients' default timeouts",
            flush=True,
        )
    policy = (policy_process.pid, policy_url)
    try:
        if "admission" in sections:
            print(f"admission (poll protocol, concurrency {args.concurrency}):", flush=True)
            for kind in args.apps.split(","):
                for workers in (m if m in _PROTOCOL else int(m) for m in args.modes.split(",")):
                    show(base, await bench(base, kind, workers, args.n, args.concurrency, policy))
        if "cpu" in sections:
            for cpu_ms in args.cpu_ms.split(","):
                os.environ["BENCH_CPU_MS"] = cpu_ms
                await cpu_section(base, args, policy, cpu_ms)
        if "ipc" in sections:
            print("IPC cost (bare backend: a fixed outcome, nothing runs):", flush=True)
            rows = []
            for workers in (0, 1):
                rows.append(await bench(base, "bare", workers, args.ipc_n, args.cpu_c, policy))
                show(base, rows[-1])
            print(
                "  server-process CPU per rollout through a worker, over in process: "
                f"{rows[1]['cpu_ms'][0] - rows[0]['cpu_ms'][0]:+.3f} ms (the worker's own side: "
                f"{rows[1]['cpu_ms'][1]:.3f} ms)",
                flush=True,
            )
    finally:
        if front is not None:
            front.terminate()
            front.wait(30)
        policy_process.terminate()
        policy_process.wait(30)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sections", default="admission,cpu,ipc")
    parser.add_argument("--apps", default="noop,strands,openai-agents")
    parser.add_argument(
        "--modes",
        default="0,2",
        help="admission: 0 = serve()'s default (a protocol process), t = the protocol thread, "
        "N = a pool of N workers",
    )
    parser.add_argument("-n", type=int, default=1200, help="rollouts per admission run")
    parser.add_argument("--concurrency", "-c", type=int, default=512)
    parser.add_argument("--cpu-n", type=int, default=2000, help="rollouts per cpu run")
    parser.add_argument("--cpu-ms", default="5,20", help="CPU work per cpu rollout, ms (list)")
    parser.add_argument("--cpu-c", type=int, default=64, help="concurrency of cpu/ipc runs")
    parser.add_argument("--ipc-n", type=int, default=4000, help="rollouts per ipc run")
    parser.add_argument(
        "--saturate-policy",
        action="store_true",
        help="reach the policy through benchmarks/slow_accept.py (a tiny listen backlog, a slow "
        "accept loop) with the clients' default timeouts: every rollout must still succeed",
    )
    parser.add_argument("--backlog", type=int, default=16, help="--saturate-policy: listen backlog")
    parser.add_argument(
        "--accept-delay-ms", type=float, default=0.0, help="--saturate-policy: ms per accept"
    )
    parser.add_argument(
        "--stall-ms",
        type=float,
        default=6000.0,
        help="--saturate-policy: the accept loop stops this long (longer than a 5 s connect "
        "timeout)...",
    )
    parser.add_argument(
        "--stall-every-ms", type=float, default=15000.0, help="...once per this period"
    )
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
