"""Every local run as one table: one row per sample, for notebooks (:func:`runs_frame`).

No pandas dependency: a list of flat ``dict`` rows, which ``pandas.DataFrame(rows)`` (or
polars, or the ``csv`` module) takes as it is.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import Any


def runs_frame(runs_dir: str | PathLike[str] | None = None) -> list[dict[str, Any]]:
    """One ``dict`` per finished sample of every run under ``runs_dir`` (default:
    ``.osmosis/evals`` under the current directory), newest run first.

    Columns: ``run``, ``run_status``, ``stop_code``, ``model``, ``rollout``, ``pass_threshold``,
    ``row_index``, ``sample_index``, ``source_row_index``, ``status``, ``outcome`` (``pass``,
    ``below threshold``, ``failed``, ``skipped``), ``reward``, ``cost_usd``, ``tokens``,
    ``duration_ms``, ``policy_calls``, ``error_type``, ``error_message``, ``failed_phase``,
    ``tool_errors`` (a count), ``label``, ``prompt``, ``answer``, ``explanation``, and one
    ``metric.<key>`` column per grader metric. Read from each run's ``index.jsonl`` (no
    transcript is opened). ``pandas.DataFrame(runs_frame())`` gives the notebook table.
    """
    from osmosis_ai.eval._impl.report.run_data import find_runs, load_run
    from osmosis_ai.eval._impl.run_dir.layout import DEFAULT_OUTPUT_ROOT

    root = Path(runs_dir) if runs_dir is not None else Path.cwd() / DEFAULT_OUTPUT_ROOT
    table: list[dict[str, Any]] = []
    for header in find_runs(root):
        data = load_run(header.path, transcripts=False)
        threshold = header.pass_threshold
        for row in data.rows:
            graded = row.status == "success" and row.reward is not None
            record: dict[str, Any] = {
                "run": header.name,
                "run_status": header.status,
                "stop_code": header.stop_code,
                "model": header.model,
                "rollout": header.rollout,
                "pass_threshold": threshold,
                "row_index": row.row_index,
                "sample_index": row.run_index,
                "source_row_index": row.source_row_index,
                "status": row.status,
                "outcome": ("pass" if row.reward >= threshold else "below threshold")
                if graded and row.reward is not None
                else row.status,
                "reward": row.reward,
                "cost_usd": row.cost_usd,
                "tokens": row.tokens,
                "duration_ms": row.duration_ms,
                "policy_calls": row.policy_calls,
                "error_type": row.error_type,
                "error_message": row.error_message,
                "failed_phase": row.failed_phase,
                "tool_errors": row.tool_error_count,
                "label": row.label,
                "prompt": row.prompt,
                "answer": row.answer,
                "explanation": row.explanation,
            }
            for key, value in (row.metrics or {}).items():
                record[f"metric.{key}"] = value
            table.append(record)
    return table
