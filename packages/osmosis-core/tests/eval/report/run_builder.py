"""Writes small run directories in the layout ``osmosis eval run`` produces (for unit tests)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osmosis_ai.rollout.trajectory.atif import OSMOSIS_KEY, SAMPLE_METRICS_KEY


@dataclass
class Row:
    row: int
    status: str = "success"
    reward: float | None = 1.0
    sample: int = 0
    source: int | None = None
    error_type: str | None = None
    error_message: str | None = None
    traceback: str | None = None
    answer: str = "#### 6"
    extra_steps: list[dict[str, Any]] = field(default_factory=list)
    training_safety: dict[str, Any] | None = None


def trajectory(row: Row) -> dict[str, Any]:
    return {
        "schema_version": "ATIF-v1.7",
        "steps": [
            {"step_id": 1, "source": "system", "message": "Use the tool."},
            {"step_id": 2, "source": "user", "message": f"What is 2 times {row.row}?"},
            {
                "step_id": 3,
                "source": "agent",
                "message": "",
                "tool_calls": [
                    {"tool_call_id": "c1", "function_name": "multiply", "arguments": {"a": 2}}
                ],
                "observation": {"results": [{"source_call_id": "c1", "content": "6.0"}]},
                "metrics": {"prompt_tokens": 10, "completion_tokens": 2, "latency_ms": 5.0},
            },
            {"step_id": 4, "source": "agent", "message": row.answer, "model_name": "m"},
            *row.extra_steps,
        ],
        # the writer's key names (atif.convert_sample_to_trajectory), never a reader's guess
        "extra": {OSMOSIS_KEY: {"label": "6", SAMPLE_METRICS_KEY: {"exact": 1.0}}},
    }


def write_run(root: Path, name: str, rows: list[Row], *, threshold: float = 1.0) -> Path:
    run = root / name
    (run / "trajectories").mkdir(parents=True)
    events, index = [], []
    for r in rows:
        rollout_id = f"{name}-{r.row}-{r.sample}"
        record = {
            "row_index": r.row,
            "run_index": r.sample,
            "source_row_index": r.row if r.source is None else r.source,
            "rollout_id": rollout_id,
            "status": r.status,
            "reward": r.reward,
            "tokens": 12,
            "duration_ms": 100.0 + r.row,
            "error_type": r.error_type,
            "policy_calls": 2,
        }
        if r.error_message:
            record["error_message"] = r.error_message
        if r.training_safety is not None:
            record["training_safety"] = r.training_safety
        file = f"trajectories/row_{r.row}_run_{r.sample}.json"
        (run / file).write_text(json.dumps(trajectory(r)))
        if r.traceback:
            trial = run / "rollout_trials" / rollout_id
            trial.mkdir(parents=True)
            diagnostics = {"failed_phase": "grader", "traceback": r.traceback}
            (trial / "diagnostics.json").write_text(json.dumps(diagnostics))
        events.append(record)
        index.append({**record, "trajectory_filename": file})
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (run / "index.jsonl").write_text("".join(json.dumps(e) + "\n" for e in index))
    rewards = [r.reward for r in rows if r.status == "success" and r.reward is not None]
    manifest = {
        "run_name": name,
        "local_run_id": f"id-{name}",
        "created_at": "2026-01-01T00:00:00+00:00",
        "inputs": {
            "model": {"model": "m", "base_url": "https://user:secret@example.com:8443/v1"},
            "dataset": {"sha256": "ab" * 32, "selected_rows": len(rows)},
            "n": 1,
            "rollout": {"name": "multiply", "entrypoint": "main.py", "source_digest": "cd" * 32},
        },
        "provenance": {"dataset_path": "/data/multiply.jsonl"},
    }
    (run / "manifest.json").write_text(json.dumps(manifest))
    metrics = {
        "eval_run": {"status": "partial", "started_at": "2026-01-01T00:00:01+00:00"},
        "summary": {
            "total_samples": len(rows),
            "graded": len(rewards),
            "pass_threshold": threshold,
            "reward_stats": {"mean": sum(rewards) / len(rewards) if rewards else None},
        },
    }
    (run / "metrics.json").write_text(json.dumps(metrics))
    return run
