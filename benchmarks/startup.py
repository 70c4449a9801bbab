"""Start-up time of ``import osmosis_ai.rollout`` (and ``osmosis --help``), median of N runs.

    uv run python benchmarks/startup.py [--runs 15]

Each run is a fresh interpreter (``python -c "import osmosis_ai.rollout"``), so the figure is
what a CLI command or a spawned rollout process pays. The bare interpreter (``python -c pass``)
is measured too, to show the share that is osmosis's own. Target: <= 100 ms for the import on
this machine (the public SDK needs 383 ms). Prints figures; never asserts.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def measure(command: list[str], runs: int) -> tuple[float, float, float]:
    subprocess.run(command, check=True, capture_output=True)  # warm the OS file cache
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), min(samples), max(samples)


def report(label: str, command: list[str], runs: int) -> None:
    median, low, high = measure(command, runs)
    print(f"{label:<40} median {median:7.1f} ms   (min {low:6.1f}, max {high:6.1f}, n={runs})")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    python = sys.executable
    report("python -c pass", [python, "-c", "pass"], args.runs)
    report(
        'python -c "import osmosis_ai.rollout"',
        [python, "-c", "import osmosis_ai.rollout"],
        args.runs,
    )
    report(
        "python -c 'from osmosis_ai.rollout import LocalBackend'",
        [python, "-c", "from osmosis_ai.rollout import LocalBackend"],
        args.runs,
    )
    script = Path(python).with_name("osmosis")
    osmosis = str(script) if script.exists() else shutil.which("osmosis")
    if osmosis:
        report("osmosis --help", [osmosis, "--help"], args.runs)
    else:
        print(
            "osmosis --help                           skipped: no 'osmosis' console script in this venv"
        )


if __name__ == "__main__":
    main()
