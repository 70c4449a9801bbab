"""One evaluation over 1, 2 and 3 rollout servers (`run_eval(servers=...)`, `eval run --servers`).

Starts three `osmosis rollout serve` processes of the tiny rollout (each its own process and
port; ``slow`` mode: a fixed sleep per rollout, so a server's capacity, not the controller,
bounds its throughput) and an instant scripted policy in its own process, then runs the same
evaluation over the first 1, 2 and 3 servers. Prints rows/s of the dispatch phase for each, and
the CPU per row of the two controller-side processes: the controller (this process; servers and
policy are other processes) and the policy proxy process ``eval run --servers`` starts (its
whole CPU, start-up included, from ``RUSAGE_CHILDREN``; and its CPU from the first to the last
row, sampled from /proc), and their total.

The argument for "the controller is not the bottleneck before ~1,000 rows/s": the controller's
per-row work (admission, long poll, fsync'd journal, finalisation) runs on one event loop and
the proxy's (every model call in and out) on another, so the busier of the two saturates one
core at ``1000 / (its CPU ms per row)`` rows/s; that figure is printed. Servers on other
machines add no controller CPU.

    uv run python benchmarks/fleet.py                  # 600 rows per run, sleep 0.05 s, 16 slots
    uv run python benchmarks/fleet.py --rows 300 --sleep 0.1
    uv run python benchmarks/fleet.py --counts 3 --profile fleet.prof   # cProfile the 3-server run

A 20-row warm-up run on one server comes first and is not counted (one-time imports and the
price table's load would otherwise be charged to the first run's rows).

Prints figures; never asserts. Runs in well under 3 minutes on the 2-core dev machine.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from scripted_policy import load_tiny_rollout, start_scripted_policy

OSMOSIS = str(Path(sys.executable).with_name("osmosis"))
KEY = "bench-fleet-key"
#: Rows of the uncounted warm-up run (one server).
WARM_UP_ROWS = 20


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_servers(ws: Path, count: int, env: dict[str, str]) -> tuple[list[Any], list[str]]:
    procs, urls = [], []
    for _ in range(count):
        port = _free_port()
        procs.append(
            subprocess.Popen(
                [OSMOSIS, "rollout", "serve", "rollouts/tiny", "--port", str(port)],
                cwd=ws,
                env={**os.environ, **env},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        urls.append(f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + 120
    for url in urls:
        while True:
            try:
                headers = {"authorization": f"Bearer {KEY}"}
                if httpx.get(f"{url}/health", headers=headers, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"{url} did not become healthy")
            time.sleep(0.1)
    return procs, urls


class _Clock:
    """Times the rows, and samples the policy proxy process's CPU at the first and last row
    (its start-up is before the first row). Finding that process scans /proc, which costs this
    process tens of ms on a busy machine: the CPU the sampling takes is kept in
    ``sampling_cpu`` and not charged to the controller."""

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self.first = self.last = 0.0
        self.results = 0
        self.proxy_cpu: list[float] = []
        self.proxy_pid: int | None = None
        self.sampling_cpu = 0.0

    def __call__(self, update: Any) -> None:
        if update.kind == "row":
            now = time.perf_counter()
            self.first = self.first or now
            self.last = now
            self.results += 1
            if self.results in (1, self.rows):
                before = _cpu()
                self.proxy_pid = self.proxy_pid or _proxy_process_pid()
                self.proxy_cpu.append(_process_cpu(self.proxy_pid))
                self.sampling_cpu += _cpu() - before

    @property
    def proxy_steady_ms(self) -> float | None:
        """The proxy process's CPU per row between the first and the last row (ms)."""
        if len(self.proxy_cpu) != 2 or self.results < 2:
            return None
        return (self.proxy_cpu[1] - self.proxy_cpu[0]) / (self.results - 1) * 1000


def _proxy_process_pid() -> int | None:
    """The pid of this process's policy proxy child (``eval run --servers`` runs the proxy in
    its own process), ``None`` when there is none."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if b"osmosis_ai.eval._impl.proxy.child" not in (entry / "cmdline").read_bytes():
                continue
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():  # fields: state, ppid, ...
            return int(entry.name)
    return None


def _process_cpu(pid: int | None) -> float:
    """CPU seconds (utime + stime) of process ``pid``; 0.0 when there is none."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def _cpu(who: int = resource.RUSAGE_SELF) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description="Eval throughput over 1, 2, 3 rollout servers.")
    parser.add_argument("--rows", type=int, default=600)
    parser.add_argument("--sleep", type=float, default=0.05, help="seconds each rollout sleeps")
    parser.add_argument("--slots", type=int, default=16, help="concurrent rollouts per server")
    parser.add_argument(
        "--counts", default="1,2,3", help="comma-separated server counts to run (default 1,2,3)"
    )
    parser.add_argument(
        "--profile",
        type=Path,
        help="write a cProfile (process CPU time) of the last counted run's controller to this file",
    )
    args = parser.parse_args()
    counts = [int(part) for part in args.counts.split(",")]
    profile_path: Path | None = args.profile
    if not counts or any(count not in (1, 2, 3) for count in counts):
        raise SystemExit("--counts takes server counts between 1 and 3, e.g. 1,2,3 or 3")

    import osmosis_ai.config
    import osmosis_ai.eval._impl.session  # noqa: F401  (imports are not per-row costs)
    from osmosis_ai.eval import run_eval

    tiny = load_tiny_rollout()
    os.environ["OSMOSIS_ROLLOUT_API_KEY"] = KEY
    policy, policy_url = start_scripted_policy()
    procs: list[Any] = []
    figures = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            os.environ["OSMOSIS_HOME"] = str(root / "home")
            rows = [{"user_prompt": f"row {i}", "ground_truth": "1"} for i in range(args.rows)]
            config = tiny.write_workspace(root / "ws", rows=rows, mode="slow")
            env = {
                "TINY_MODE": "slow",
                "TINY_SLEEP": str(args.sleep),
                "TINY_CONCURRENCY": str(args.slots),
            }
            procs, urls = _start_servers(root / "ws", max(counts), env)
            # A warm-up run (not counted): first imports (pricing table, proxy server, report
            # code) and the price table's load are once per process, not per row.
            warm = tiny.write_workspace(root / "warm", rows=rows[:WARM_UP_ROWS], mode="slow")
            run_eval(
                warm, name="bench-warm", model="instant", base_url=policy_url, servers=urls[:1]
            )
            for number, count in enumerate(counts):
                clock = _Clock(args.rows)
                profile_to = profile_path if number == len(counts) - 1 else None
                profiler = None if profile_to is None else cProfile.Profile(time.process_time)
                children_before = _cpu(resource.RUSAGE_CHILDREN)
                cpu_before, started = _cpu(), time.perf_counter()
                if profiler is not None:
                    profiler.enable()
                result = run_eval(
                    config,
                    name=f"bench-{number}-{count}",
                    model="instant",
                    base_url=policy_url,
                    servers=urls[:count],
                    progress=clock,
                )
                if profiler is not None and profile_to is not None:
                    profiler.disable()
                    profiler.dump_stats(profile_to)
                wall = time.perf_counter() - started
                cpu = _cpu() - cpu_before - clock.sampling_cpu  # the benchmark's own sampling
                # The proxy process has been waited for when run_eval returns: its whole CPU,
                # start-up included (the servers and the policy are waited for only at the end).
                proxy_cpu = _cpu(resource.RUSAGE_CHILDREN) - children_before
                steady = max(clock.last - clock.first, 1e-9)
                figures.append(
                    (
                        count,
                        result.succeeded,
                        (clock.results - 1) / steady,
                        wall,
                        cpu,
                        proxy_cpu,
                        clock,
                    )
                )
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait()
        policy.terminate()
        policy.wait()

    ceiling = args.slots / args.sleep
    print(
        f"rows per run: {args.rows}  rollout sleep: {args.sleep}s  slots per server: "
        f"{args.slots} (a server's ceiling: {ceiling:.0f} rows/s)"
    )
    for count, succeeded, rate, wall, cpu, proxy_cpu, clock in figures:
        steady_proxy = clock.proxy_steady_ms
        busiest = max(cpu, proxy_cpu if steady_proxy is None else steady_proxy * args.rows / 1000)
        print(
            f"{count} server(s): {succeeded}/{args.rows} succeeded  {rate:.0f} rows/s steady, "
            f"{args.rows / wall:.0f} rows/s end to end ({wall:.2f} s)\n"
            f"    controller process CPU {cpu / args.rows * 1000:.2f} ms/row; policy proxy "
            f"process {proxy_cpu / args.rows * 1000:.2f} ms/row with its start-up, "
            + ("n/a" if steady_proxy is None else f"{steady_proxy:.2f}")
            + " ms/row first to last row; total "
            f"{(cpu + proxy_cpu) / args.rows * 1000:.2f} ms/row\n"
            f"    busiest process saturates one core at {args.rows / busiest:.0f} rows/s"
        )
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
