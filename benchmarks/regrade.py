"""Regrading 10,000 saved samples with a trivial grader (``osmosis_ai.eval.regrade_run``).

Makes a real run with the engine (the tiny rollout, 4 rows, the mock policy: a tool call, its
result, the answer), then grows it to ``--samples`` samples by repeating its rows (their
records in ``index.jsonl`` and their trajectory files, renumbered), and times the regrade of
the whole run with a grader that sets reward 1.0: reading every trajectory, rebuilding each
sample, the engine's grader phase, and writing the new run (manifest, journal, index,
metrics, hard-linked trajectories). The target (issue 44) is <= 10 s on the 2-core dev
machine.

    uv run python benchmarks/regrade.py                  # 10,000 samples
    uv run python benchmarks/regrade.py --samples 2000

Prints figures; never asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from scripted_policy import load_tiny_rollout

from osmosis_ai.rollout import Grader


class Trivial(Grader):
    async def grade(self, ctx):  # type: ignore[no-untyped-def]
        ctx.set_reward(1.0)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _grow(run_dir: Path, samples: int) -> None:
    """Repeat the run's rows until it holds ``samples`` samples (one per row, n=1)."""
    from osmosis_ai.eval import read_index
    from osmosis_ai.eval._impl.run_dir.records import write_index

    seed = read_index(run_dir)
    rows = []
    for i in range(samples):
        base = seed[i % len(seed)]
        name = f"trajectories/row_{i}_run_0.json"
        if not (run_dir / name).exists():
            shutil.copyfile(run_dir / str(base.trajectory_filename), run_dir / name)
        rows.append(replace(base, row_index=i, source_row_index=i, trajectory_filename=name))
    write_index(run_dir / "index.jsonl", rows)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    metrics["summary"]["total_work_items"] = samples
    (run_dir / "metrics.json").write_text(json.dumps(metrics))


def main() -> None:
    parser = argparse.ArgumentParser(description="Regrade of many saved samples.")
    parser.add_argument("--samples", type=int, default=10_000)
    args = parser.parse_args()

    import osmosis_ai.eval._impl.regrade
    import osmosis_ai.eval._impl.session  # noqa: F401
    from osmosis_ai.eval import regrade_run
    from osmosis_ai.eval._impl.plan.plan import EvalOptions, build_plan
    from osmosis_ai.eval._impl.session import run_session

    tiny = load_tiny_rollout()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["OSMOSIS_HOME"] = str(root / "home")
        config = tiny.write_workspace(root / "ws", n_rows=4)
        source = asyncio.run(run_session(build_plan(config, EvalOptions(name="source")))).run_dir
        _grow(source, args.samples)
        before = _cpu()
        started = time.perf_counter()
        result = regrade_run(source, name="regraded", grader=Trivial, judge_cache=False)
        wall = time.perf_counter() - started
        cpu = _cpu() - before
    print(f"samples: {args.samples}  regraded: {result.regraded}  copied: {result.copied}")
    print(f"mean reward after: {result.figures.mean_reward}")
    print(f"regrade wall time: {wall:.2f} s ({args.samples / wall:.0f} samples/s)")
    print(f"regrade CPU: {cpu:.2f} s ({cpu / args.samples * 1000:.3f} ms per sample)")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
