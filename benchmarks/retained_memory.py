"""Retained-result memory: the rollout server's RSS against its byte bound (issue 20, item 5).

The server runs in a subprocess (``serve``) with a backend that echoes the prompt back as the
sample, so each finished result is about as large as its prompt (the issue's case: 16.7 MB
prompts). This process admits ``--rollouts`` rollouts one after another, each with a
``--prompt-mib`` prompt, and fetches each result (as a controller does); finished results stay
retained (``result_retention_sec`` is 900 s) until a bound evicts them. Two scenarios:

* ``bounded``: ``max_retained_bytes=--bound-mib`` (the documented default is 1 GiB; a smaller
  bound shows the effect with fewer rollouts);
* ``count only``: the byte bound effectively off (1 TiB), as before issue 20: only the count
  bound (20,000) applies.

Figures: the server's RSS at start, after every rollout (the last value and the peak,
``VmHWM``), and the encoded bytes produced; "RSS over baseline" is what retention costs and is
to be compared with the bound. Prints figures only; never asserts.

    uv run python benchmarks/retained_memory.py
    uv run python benchmarks/retained_memory.py --rollouts 80 --bound-mib 1024
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

SERVER = """
import sys
from osmosis_ai.rollout.backend.base import ExecutionBackend
from osmosis_ai.rollout.server import create_rollout_server, serve
from osmosis_ai.rollout.types import ExecutionOutcome, ExecutionResult, RolloutSample, RolloutStatus

class Echo(ExecutionBackend):
    async def execute(self, request, progress=None):
        sample = RolloutSample(messages=request.prompt, reward=1.0)
        return ExecutionOutcome(workflow=ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample))

app = create_rollout_server(
    backend=Echo(),
    max_retained_bytes=int(sys.argv[1]),
    max_body_bytes=int(sys.argv[2]),
    outbox_dir=sys.argv[3],
    save_trajectories=False,
)
serve(app, port=0, log_level="warning")
"""
MIB = 1024 * 1024
LEASE = "X-Osmosis-Rollout-Lease"


def status_kib(pid: int, field: str) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    match = re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE)
    return int(match.group(1)) if match else 0


def start(bound: int, body_limit: int, outbox: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(bound), str(body_limit), outbox],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:  # "rollout server listening on http://127.0.0.1:PORT"
        found = re.search(r"listening on (http://\S+)", line)
        if found:
            # keep draining its output, so the server never blocks on a full pipe
            threading.Thread(target=process.stderr.read, daemon=True).start()
            return process, found.group(1)
    raise RuntimeError(f"server exited with {process.wait()}")


def scenario(name: str, bound: int, rollouts: int, prompt_mib: float) -> None:
    content = "x" * int(prompt_mib * MIB)
    with tempfile.TemporaryDirectory(prefix="retained-") as outbox:
        process, url = start(bound, int(prompt_mib * MIB) + MIB, outbox)
        try:
            with httpx.Client(base_url=url, timeout=120) as client:
                client.get("/health").raise_for_status()
                baseline = status_kib(process.pid, "VmRSS")
                produced = 0
                started = time.perf_counter()
                for i in range(rollouts):
                    body = {
                        "rollout_id": f"r{i}",
                        "initial_messages": [{"role": "user", "content": content}],
                        "chat_completions_url": "http://127.0.0.1:9/v1",
                    }
                    admitted = client.post("/rollout", content=json.dumps(body))
                    admitted.raise_for_status()
                    token = admitted.json()["polling_lease_token"]
                    result = client.get(f"/rollout/r{i}/result", headers={LEASE: token})
                    result.raise_for_status()
                    produced += len(result.content)
                elapsed = time.perf_counter() - started
                rss = status_kib(process.pid, "VmRSS")
                peak = status_kib(process.pid, "VmHWM")
        finally:
            process.kill()
            process.wait()
    retained = min(produced, bound)
    print(
        f"{name:<11} bound {bound / MIB:>9,.0f} MiB | produced {produced / MIB:7,.0f} MiB in "
        f"{rollouts} results ({elapsed:.1f} s) | retained at most {retained / MIB:6,.0f} MiB | "
        f"RSS {baseline / 1024:5,.0f} -> {rss / 1024:6,.0f} MiB (peak {peak / 1024:6,.0f}), "
        f"over baseline {(rss - baseline) / 1024:6,.0f} MiB",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=24)
    parser.add_argument("--prompt-mib", type=float, default=16.0)
    parser.add_argument("--bound-mib", type=float, default=128.0)
    parser.add_argument("--scenarios", default="bounded,count only")
    args = parser.parse_args()
    print(
        f"retained-memory benchmark: python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"{args.rollouts} rollouts x {args.prompt_mib:g} MiB prompts, fetched one by one",
        flush=True,
    )
    bounds = {"bounded": int(args.bound_mib * MIB), "count only": 1024 * 1024 * MIB}
    for name in args.scenarios.split(","):
        scenario(name.strip(), bounds[name.strip()], args.rollouts, args.prompt_mib)


if __name__ == "__main__":
    main()
