"""Throughput of the local eval controller (`osmosis_ai.eval.run_eval`, what `osmosis eval run` renders).

1,000 rows x n=1 through a no-op rollout (one policy call, reward 1.0) against an instant
scripted policy running in its own process, so the figures are about the controller: admission,
long polls, the policy proxy, the fsync'd journal and the finalisation (index, metrics,
trajectories). Prints rows/s for the dispatch phase and end to end, and the controller's CPU
time per row (this process only; the rollout server and the policy are children).

    uv run python benchmarks/eval.py                 # 1000 rows, one policy call per row
    uv run python benchmarks/eval.py --mode noop     # no policy call at all
    uv run python benchmarks/eval.py --rows 200 --max-in-flight 32
    uv run python benchmarks/eval.py --without-safety-check   # the append-only check stubbed

The training-safety check's cost (issue 15: at most +5% controller CPU per row) is the
difference between runs with and without ``--without-safety-check``; run them interleaved
(A B A B ...) on a shared machine.

Prints figures; never asserts (the target on the 2-core dev machine is >= 300 rows/s).
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from scripted_policy import load_tiny_rollout, start_scripted_policy


class _Clock:
    """Progress callback that timestamps the dispatch phase."""

    def __init__(self) -> None:
        self.planned_at = 0.0
        self.first_result = 0.0
        self.last_result = 0.0
        self.results = 0

    def __call__(self, update: Any) -> None:
        now = time.perf_counter()
        if update.kind == "started":
            self.planned_at = now
        elif update.kind == "row":
            self.first_result = self.first_result or now
            self.last_result = now
            self.results += 1


def _cpu(who: int = resource.RUSAGE_SELF) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


class _NoVerdict:
    def to_json(self) -> None:
        return None


def _stub_safety_check() -> None:
    """The scheduler calls ``check_append_only`` once per finished row; make it free."""
    import osmosis_ai.eval._impl.scheduler as scheduler

    scheduler.check_append_only = lambda calls: _NoVerdict()  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser(description="Throughput of the local eval controller.")
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--max-in-flight", type=int, default=64)
    parser.add_argument("--mode", choices=["one-call", "noop"], default="one-call")
    parser.add_argument(
        "--without-safety-check",
        action="store_true",
        help="replace the per-row append-only check with a stub (to measure what it costs)",
    )
    args = parser.parse_args()
    if args.without_safety_check:
        _stub_safety_check()

    # Import the engine (and the pydantic config models) before measuring: the figures are
    # per-row costs, and one-off imports are ~0.4 s of CPU that would read as 0.4 ms per row.
    import osmosis_ai.config
    import osmosis_ai.eval._impl.session  # noqa: F401
    from osmosis_ai.eval import run_eval

    tiny = load_tiny_rollout()
    policy, policy_url = start_scripted_policy()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            os.environ["OSMOSIS_HOME"] = str(root / "home")
            rows = [{"user_prompt": f"row {i}", "ground_truth": "1"} for i in range(args.rows)]
            config = tiny.write_workspace(
                root / "ws",
                rows=rows,
                mode=args.mode,
                env={"TINY_CONCURRENCY": str(args.max_in_flight)},
            )
            clock = _Clock()
            cpu_before = _cpu()
            children_before = _cpu(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            result = run_eval(
                config,
                name="bench",
                model="instant",
                base_url=policy_url,
                max_in_flight=args.max_in_flight,
                progress=clock,
            )
            wall = time.perf_counter() - started
            cpu = _cpu() - cpu_before
            server_cpu = _cpu(resource.RUSAGE_CHILDREN) - children_before
    finally:
        policy.terminate()
        policy.wait()

    dispatch = clock.last_result - clock.planned_at
    check = "stubbed" if args.without_safety_check else "on"
    print(
        f"rows: {args.rows}  n: 1  mode: {args.mode}  max in flight: {args.max_in_flight}"
        f"  safety check: {check}"
    )
    print(f"status: {result.status}  succeeded: {result.succeeded}  failed: {result.failed}")
    print(f"dispatch phase (includes rollout-server start-up): {dispatch:.2f} s")
    print(
        f"steady state (first to last result): {clock.last_result - clock.first_result:.2f} s"
        f" -> {max(clock.results - 1, 0) / max(clock.last_result - clock.first_result, 1e-9):.0f} rows/s"
    )
    print(
        f"end to end (lock, server start/stop, index, metrics, trajectories): {wall:.2f} s"
        f" -> {args.rows / wall:.0f} rows/s"
    )
    print(f"controller CPU: {cpu:.2f} s total, {cpu / args.rows * 1000:.2f} ms per row")
    print(f"rollout server CPU (child process): {server_cpu / args.rows * 1000:.2f} ms per row")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
