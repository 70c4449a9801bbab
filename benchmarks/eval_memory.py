"""Memory of the eval controller over a long run, finalisation included (issue 39).

``--rows`` rows x n=1 through the tiny no-op rollout (one policy call, reward 1.0) against the
instant scripted policy in its own process, as ``benchmarks/eval.py`` runs them. The controller
is this process: its RSS is printed every ``--every`` finished rows, after dispatch (the last
row), after finalisation (``run_eval`` returned) and its peak (``VmHWM``), so growth with the
number of rows and the finalisation's own peak both show: when the last row finishes, the peak
so far (dispatch) is read and reset (``/proc/self/clear_refs``), so the peak read after
``run_eval`` returned is finalisation's alone. "Flat" means the figures after the first
``--every`` rows, and finalisation's peak, stay within 10 % of the dispatch plateau. Prints
figures only; never asserts.

    uv run python benchmarks/eval_memory.py --rows 20000
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from scripted_policy import load_tiny_rollout, start_scripted_policy


def status_mib(field: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return 0.0


class _Probe:
    """Progress callback: RSS every ``every`` finished rows."""

    def __init__(self, every: int, total: int) -> None:
        self.every = every
        self.total = total
        self.dispatch_peak: float | None = None
        self.rows = 0
        self.samples: list[tuple[int, float]] = []
        self.started = time.perf_counter()

    def __call__(self, update: Any) -> None:
        if update.kind != "row":
            return
        self.rows += 1
        if self.rows % self.every == 0:
            rss = status_mib("VmRSS")
            self.samples.append((self.rows, rss))
            rate = self.rows / (time.perf_counter() - self.started)
            print(f"{self.rows:>7} rows: RSS {rss:6.0f} MiB  ({rate:.0f} rows/s)", flush=True)
        if self.rows == self.total:
            self.dispatch_peak = status_mib("VmHWM")
            _reset_peak()


def _reset_peak() -> None:
    """Reset ``VmHWM`` to the current RSS (Linux: writing 5 to ``/proc/self/clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--every", type=int, default=2_000)
    parser.add_argument("--max-in-flight", type=int, default=64)
    args = parser.parse_args()

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
                mode="one-call",
                env={"TINY_CONCURRENCY": str(args.max_in_flight)},
            )
            del rows
            print(f"before the run: RSS {status_mib('VmRSS'):.0f} MiB", flush=True)
            probe = _Probe(args.every, args.rows)
            started = time.perf_counter()
            result = run_eval(
                config,
                name="bench",
                model="instant",
                base_url=policy_url,
                max_in_flight=args.max_in_flight,
                progress=probe,
            )
            wall = time.perf_counter() - started
            after = status_mib("VmRSS")
            peak = status_mib("VmHWM")
    finally:
        policy.terminate()
        policy.wait()

    print(f"status: {result.status}  succeeded: {result.succeeded}  failed: {result.failed}")
    print(f"after finalisation: RSS {after:.0f} MiB, peak (VmHWM) {peak:.0f} MiB, {wall:.1f} s")
    plateau = [rss for rows, rss in probe.samples if rows > args.every] or [after]
    if probe.dispatch_peak is not None:
        top = max(plateau)
        print(
            f"dispatch: plateau {top:.0f} MiB, peak {probe.dispatch_peak:.0f} MiB; "
            f"finalisation peak {peak:.0f} MiB ({(peak - top) / top * 100:+.1f} % of the plateau)"
        )
    steady = [rss for rows, rss in probe.samples if rows > args.every] or [after]
    low = min(steady)
    print(
        f"from {args.every * 2} rows to the end (finalisation included): "
        f"{low:.0f} .. {max([*steady, after, peak]):.0f} MiB "
        f"(+{(max([*steady, after, peak]) - low) / low * 100:.1f} %)"
    )
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
