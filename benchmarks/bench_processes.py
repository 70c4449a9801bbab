"""What the framework benchmarks (strands, openai_agents, pydantic_ai_integration) share: a
rollout server role on a free loopback port, starting and stopping role processes, and reading a
process's CPU time, peak memory and import time (imported by path: benchmarks is not a package)."""

from __future__ import annotations

import os
import resource
import socket
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def serve_rollout_backend(backend: Any, *, save_trajectories: bool) -> None:
    """Serve ``backend`` behind ``create_rollout_server`` on a free port of 127.0.0.1; print the
    base URL as the first stdout line (what :func:`spawn` waits for), then serve until killed."""
    from osmosis_ai._util.serving import run, uvicorn_config, uvicorn_server
    from osmosis_ai.rollout.server import create_rollout_server

    app = create_rollout_server(
        backend=backend, configure_logging=False, save_trajectories=save_trajectories
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    config = uvicorn_config(app, quiet=True, timeout_keep_alive=60)
    run(uvicorn_server(config), sockets=[sock])


def spawn(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    """Start ``python ARGS``, a process that prints its URL on its first stdout line."""
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line:
        proc.kill()
        raise RuntimeError(f"{' '.join(args)} did not start")
    return proc, line


def stop(proc: subprocess.Popen[str]) -> None:
    """Terminate ``proc``; kill it if it has not exited 30 s later."""
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a running process (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_peak_rss_mb(pid: int) -> float:
    """Peak resident memory (VmHWM) of a running process, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    """Peak resident memory of this process, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    """User + system CPU seconds of this process."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def import_seconds(
    statement: str, repeats: int = 3, summary: Callable[[list[float]], float] = statistics.median
) -> float:
    """Seconds ``statement`` (an import) takes in a fresh interpreter: ``summary`` (the median,
    or ``min``) of ``repeats`` runs."""
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(repeats)
    ]
    return summary(runs)
