"""The HTML report at scale: generation time, file size, and Chromium's time to the first table.

    uv sync --all-packages --all-extras --group browser
    uv run python benchmarks/report.py [--rows 10000] [--repeat 3] [--no-browser]

Builds a synthetic run directory in today's layout (manifest, metrics, journal, index and one
ATIF trajectory per row: system, user, an assistant tool call with its result, the answer, and
two policy calls from the proxy; 5 % of rows failed with a grader traceback), then prints:

* ``generate``: ``load_run`` + ``write_report`` wall time (median of ``--repeat``), the report's
  size, and the part of it that is embedded compressed data;
* ``eval show --limit 20``: wall time of ``osmosis --plain eval show <run> --limit 20`` in a
  fresh process (median of ``--repeat``), Python start-up included;
* ``chromium``: the page's own ``performance`` mark set right after the first table page is in
  the DOM (ms since navigation start), and the time until the whole page is ready, in headless
  Debian Chromium from ``file://`` with the network blocked (median of ``--repeat`` loads).

Prints figures, never asserts. Targets (issues 13, 37): generate <= 3 s, first table <= 2 s,
``eval show --limit 20`` <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

SYSTEM = "You are a careful calculator. Use the `multiply` tool, then answer `#### <number>`."
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/work/rollouts/multiply/grader.py", line 34, in grade\n'
    '    _ = {"content": ctx.label}["contnet"]\n'
    "KeyError: 'contnet'\n"
)


def _trajectory(row: int, a: int, b: int, answer: int) -> dict[str, Any]:
    calls = [
        {"started_at": 1.0, "stream": True, "status_code": 200, "attempts": 1,
         "latency_ms": 210.5 + row % 97, "first_byte_ms": 80.0, "model": "bench",
         "finish_reason": "tool_calls",
         "usage": {"prompt_tokens": 67, "completion_tokens": 7, "total_tokens": 74}},
        {"started_at": 2.0, "stream": True, "status_code": 200, "attempts": 1,
         "latency_ms": 120.25 + row % 53, "first_byte_ms": 60.0, "model": "bench",
         "finish_reason": "stop",
         "usage": {"prompt_tokens": 76, "completion_tokens": 3, "total_tokens": 79}},
    ]  # fmt: skip
    call_id = f"call_{row:08d}_0"
    return {
        "schema_version": "ATIF-v1.7",
        "session_id": f"r{row}",
        "agent": {"name": "osmosis-rollout-sdk", "version": "0.1.0", "model_name": "bench"},
        "steps": [
            {"step_id": 1, "source": "system", "message": SYSTEM},
            {"step_id": 2, "source": "user", "message": f"What is {a} multiplied by {b}?"},
            {"step_id": 3, "source": "agent", "message": "", "model_name": "bench",
             "tool_calls": [{"tool_call_id": call_id, "function_name": "multiply",
                             "arguments": {"a": a, "b": b}}],
             "metrics": {"prompt_tokens": 67, "completion_tokens": 7},
             "observation": {"results": [{"source_call_id": call_id, "content": f"{a * b}.0"}]}},
            {"step_id": 4, "source": "agent", "message": f"#### {answer}", "model_name": "bench",
             "metrics": {"prompt_tokens": 76, "completion_tokens": 3}},
        ],
        "extra": {"osmosis": {"rollout_id": f"r{row}", "label": str(a * b), "llm_calls": calls}},
    }  # fmt: skip


def make_run(root: Path, rows: int) -> Path:
    run = root / "bench-run"
    (run / "trajectories").mkdir(parents=True)
    (run / "rollout_trials").mkdir()
    events, index = [], []
    for row in range(rows):
        a, b = 100 + row, 7 + row % 13
        failed = row % 20 == 7
        wrong = row % 5 == 3
        answer = a * b + (1 if wrong else 0)
        trajectory = f"trajectories/row_{row}_run_0.json"
        (run / trajectory).write_text(json.dumps(_trajectory(row, a, b, answer), indent=2))
        record = {
            "row_index": row, "run_index": 0, "source_row_index": row, "rollout_id": f"r{row}",
            "status": "failed" if failed else "success",
            "reward": None if failed else (0.0 if wrong else 1.0) * (0.5 + (row % 7) / 12),
            "tokens": 153, "duration_ms": 400.0 + (row * 37) % 900, "policy_calls": 2,
            "error_type": "agent_error" if failed else None,
        }  # fmt: skip
        # The facts the engine stores in index.jsonl for every row (prompt, label, answer, cost,
        # grader metrics; the traceback of a failure): readers then skip the trajectories.
        record["prompt"] = f"What is {a} multiplied by {b}?"
        record["label"] = str(a * b)
        record["cost"] = {"policy_usd": 0.0001, "judge_usd": 0.0, "total_usd": 0.0001}
        if failed:
            record["traceback"] = TRACEBACK
            record["failed_phase"] = "grader"
        else:
            record["answer"] = f"#### {answer}"
            record["metrics"] = {"exact": 0.0 if wrong else 1.0, "used_tool": 1.0}
        if failed:
            record["error_message"] = "'contnet'"
            trial = run / "rollout_trials" / f"r{row}"
            trial.mkdir()
            (trial / "diagnostics.json").write_text(
                json.dumps({"failed_phase": "grader", "traceback": TRACEBACK})
            )
        events.append(record)
        index.append({**record, "trajectory_filename": trajectory})
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (run / "index.jsonl").write_text("".join(json.dumps(e) + "\n" for e in index))
    rewards = [e["reward"] for e in events if e["reward"] is not None]
    (run / "manifest.json").write_text(json.dumps({
        "run_name": "bench-run", "local_run_id": "bench", "created_at": "2026-01-01T00:00:00+00:00",
        "inputs": {"model": {"model": "bench", "base_url": "http://127.0.0.1:8000/v1"},
                   "dataset": {"sha256": "0" * 64, "selected_rows": rows}, "n": 1,
                   "rollout": {"name": "multiply", "entrypoint": "main.py", "source_digest": "1" * 64}},
        "provenance": {"dataset_path": "data/multiply.jsonl"},
    }))  # fmt: skip
    (run / "metrics.json").write_text(json.dumps({
        "eval_run": {"status": "partial", "name": "bench-run", "started_at": "2026-01-01T00:00:00+00:00",
                     "completed_at": "2026-01-01T01:00:00+00:00", "duration_ms": 3.6e6},
        "summary": {"total_work_items": rows, "total_samples": rows, "graded": len(rewards),
                    "failed": rows - len(rewards), "skipped": 0, "pass_threshold": 0.5,
                    "reward_stats": {"mean": statistics.fmean(rewards)}, "tokens_used": 153 * rows,
                    "failures_by_type": {"agent_error": rows - len(rewards)}},
    }))  # fmt: skip
    return run


def generate(run: Path, repeat: int) -> tuple[Path, list[float]]:
    from osmosis_ai.eval.report import load_run, write_report

    target = run / "report.html"
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        write_report(load_run(run), target)
        times.append(time.perf_counter() - start)
    return target, times


def show_limit(run: Path, repeat: int) -> list[float]:
    import subprocess
    import sys

    osmosis = Path(sys.executable).with_name("osmosis")
    command = [str(osmosis), "--plain", "eval", "show", str(run), "--limit", "20"]
    if subprocess.run(command, capture_output=True).returncode == 2:  # an SDK without --limit
        print("eval show has no --limit here: timing `eval show` of every row")
        command = command[:-2]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


def chromium(report: Path, repeat: int) -> tuple[list[float], list[float]]:
    from playwright.sync_api import sync_playwright

    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
    table, ready = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=args)
        for _ in range(repeat):
            page = browser.new_page()
            page.route(
                "**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort()
            )
            page.goto(report.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=60_000)
            table.append(
                page.evaluate("performance.getEntriesByName('osmosis-table-rendered')[0].startTime")
            )
            ready.append(page.evaluate("performance.now()"))
            page.close()
        browser.close()
    return table, ready


def main() -> None:
    parser = argparse.ArgumentParser(description="HTML report generation and rendering figures")
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="osmosis-report-bench-") as tmp:
        run = make_run(Path(tmp), args.rows)
        report, times = generate(run, args.repeat)
        size = report.stat().st_size
        text = report.read_text()
        packed = sum(
            len(part.split("</script>")[0])
            for part in text.split('type="application/octet-stream"')[1:]
        )
        print(f"rows: {args.rows} (2 policy calls each, {args.rows // 20} failed with a traceback)")
        print(
            f"generate: median {statistics.median(times):.2f} s (runs: {', '.join(f'{t:.2f}' for t in times)})"
        )
        print(f"report size: {size / 1e6:.2f} MB ({packed / 1e6:.2f} MB gzip+base64 data)")
        shown = show_limit(run, args.repeat)
        print(
            f"eval show --limit 20: median {statistics.median(shown):.2f} s "
            f"(runs: {', '.join(f'{t:.2f}' for t in shown)})"
        )
        if not args.no_browser:
            table, ready = chromium(report, args.repeat)
            print(
                f"chromium first table: median {statistics.median(table):.0f} ms "
                f"(loads: {', '.join(f'{t:.0f}' for t in table)})"
            )
            print(
                f"chromium page ready (charts, failures): median {statistics.median(ready):.0f} ms"
            )


if __name__ == "__main__":
    main()
