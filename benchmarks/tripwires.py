"""What the reward-hacking tripwires (docs/tripwires.md) add to the eval controller's CPU per row.

Runs the tiny rollout in its ``multiply`` mode (a tool call, its result, the answer: the
transcripts the tripwires scan) against the scripted multiply policy in its own process, with
the tripwires on (default) or stubbed out (``--without-tripwires``), and prints the
controller's CPU per row (this process only). Then, on the run just made, it times the
tripwire work alone (the per-row scans and digests, the per-group checks, the journal pass and
the rollout folder's digest), best of 5, and prints it as a share of the controller's CPU per
row: the figure to compare with the 2 % budget (issue 44), steadier on a shared machine than
the difference of two whole runs.

    uv run python benchmarks/tripwires.py                       # 500 rows, tripwires on
    uv run python benchmarks/tripwires.py --without-tripwires   # the same run, stubbed

Prints figures; never asserts.
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


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _stub_tripwires() -> None:
    import osmosis_ai.eval._impl.finalize as finalize
    import osmosis_ai.eval._impl.results.tripwires as tripwires

    tripwires.row_findings = lambda *a, **k: []  # type: ignore[assignment]
    tripwires.transcript_digest = lambda document: None  # type: ignore[assignment]
    finalize._with_tripwires = lambda plan, rows, *a: rows  # type: ignore[assignment]


def _tripwire_work(run_dir: Path, rollout_dir: Path) -> float:
    """CPU seconds of the tripwire work over the run's rows (as finalisation does it)."""
    from osmosis_ai.eval._impl.report.run_data import load_run, read_json
    from osmosis_ai.eval._impl.results import tripwires
    from osmosis_ai.eval._impl.run_dir.journal import load_latest
    from osmosis_ai.eval._impl.run_dir.manifest import source_digest

    rows = load_run(run_dir, transcripts=False).rows
    documents = [read_json(run_dir / str(r.trajectory_filename)) for r in rows]
    latest = load_latest(run_dir / "events.jsonl")
    started = _cpu()
    digests: dict[tuple[int, int], str | None] = {}
    findings: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for row, document in zip(rows, documents, strict=True):
        key = (row.row_index, row.run_index)
        found = tripwires.row_findings(row, document, harbor=False)
        if found:
            findings[key] = found
        digests[key] = tripwires.transcript_digest(document)
    tripwires.group_findings(rows, digests)
    tripwires.code_findings(latest, changed_now=False, session_ids=set())
    source_digest(rollout_dir, exclude=(run_dir.parent,))
    tripwires.with_findings(rows, findings, {})
    tripwires.summarize(rows, {})
    return _cpu() - started


def main() -> None:
    parser = argparse.ArgumentParser(description="The tripwires' share of controller CPU.")
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--max-in-flight", type=int, default=64)
    parser.add_argument("--without-tripwires", action="store_true")
    args = parser.parse_args()
    if args.without_tripwires:
        _stub_tripwires()

    import osmosis_ai.config
    import osmosis_ai.eval._impl.session  # noqa: F401
    from osmosis_ai.eval import run_eval

    tiny = load_tiny_rollout()
    policy, policy_url = start_scripted_policy("multiply")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            os.environ["OSMOSIS_HOME"] = str(root / "home")
            rows = [
                {"user_prompt": f"What is {i % 50 + 2} times {i % 7 + 3}?",
                 "ground_truth": str((i % 50 + 2) * (i % 7 + 3))}
                for i in range(args.rows)
            ]  # fmt: skip
            config = tiny.write_workspace(
                root / "ws",
                rows=rows,
                mode="multiply",
                env={"TINY_CONCURRENCY": str(args.max_in_flight)},
            )
            before = _cpu()
            started = time.perf_counter()
            result = run_eval(
                config,
                name="bench",
                model="scripted",
                base_url=policy_url,
                max_in_flight=args.max_in_flight,
            )
            wall = time.perf_counter() - started
            cpu = _cpu() - before
            work = (
                None
                if args.without_tripwires
                else min(
                    _tripwire_work(result.run_dir, root / "ws" / "rollouts" / "tiny")
                    for _ in range(5)
                )
            )
    finally:
        policy.terminate()
        policy.wait()

    per_row = cpu / args.rows * 1000
    state = "stubbed" if args.without_tripwires else "on"
    print(f"rows: {args.rows}  mode: multiply (tool call + answer)  tripwires: {state}")
    print(f"status: {result.status}  succeeded: {result.succeeded}  failed: {result.failed}")
    print(f"end to end: {wall:.2f} s")
    print(f"controller CPU: {cpu:.2f} s total, {per_row:.3f} ms per row")
    if work is not None:
        print(
            f"tripwire work alone (best of 5): {work / args.rows * 1000:.4f} ms per row = "
            f"{work / cpu:.2%} of the controller's CPU per row"
        )
        print(f"flagged rows: {result.metrics['tripwires']['rows']}")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
