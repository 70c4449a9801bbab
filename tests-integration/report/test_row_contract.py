"""The per-row record's contract: rows written by the REAL engine, read back by every reader.

One run of the core tests' tiny rollout (a real rollout server child process, a scripted policy
that reports usage, a price for the model) whose grader sets two metrics and an explanation,
and whose workflow crashes after its first policy call on one row. Every reader of a run must
show the same facts for each row: :attr:`EvalRun.rows`, ``index.jsonl`` (its raw keys too: a
renamed key fails here), ``metrics.json``, :func:`load_run` (what the report and the CLI read),
``eval show`` / ``eval show --row`` / ``eval list`` / ``eval compare`` (``--json``) and the
HTML report's embedded rows.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from typing import Any

import pytest
from contract_support import CALL_USD, CRASH_ROW, N_ROWS, TOOL_ERROR_ROW, ContractRun

from osmosis_ai.eval import EvalRun, read_index
from osmosis_ai.eval.report import load_run

#: The keys every finished row's ``index.jsonl`` record has (a renamed key fails the test).
SUCCESS_KEYS = {
    "row_index", "run_index", "source_row_index", "rollout_id", "status", "reward", "tokens",
    "duration_ms", "policy_calls", "trajectory_filename", "resumed", "attempt", "prompt",
    "label", "answer", "cost", "metrics", "explanation",
}  # fmt: skip
FAILED_KEYS = {
    "row_index", "run_index", "source_row_index", "rollout_id", "status", "error_type",
    "error_message", "tokens", "policy_calls", "prompt", "label", "traceback", "failed_phase",
    "cost", "trajectory_filename",
}  # fmt: skip


def _cli_json(contract: ContractRun, *args: str) -> Any:
    result = contract.cli.run("--json", "eval", *args, cwd=contract.workspace)
    assert result.code in (0, 1), result.stderr
    return json.loads(result.stdout)


def _expected(run: EvalRun) -> dict[tuple[int, int], dict[str, Any]]:
    """What each row must show, from what the rollout did (not from any reader)."""
    out: dict[tuple[int, int], dict[str, Any]] = {}
    for i in range(N_ROWS):
        label = str((i + 2) * (i + 3))
        for s in range(2):
            if i == CRASH_ROW:
                out[(i, s)] = {"status": "failed", "label": label, "policy_calls": 1}
            else:
                out[(i, s)] = {
                    "status": "success",
                    "label": label,
                    "reward": 1.0,
                    "metrics": {"used_tool": 1.0, "exact": 1.0},
                    "policy_calls": 2,
                }
    assert len(run.rows) == len(out)
    return out


def test_the_engine_writes_every_fact_under_the_documented_keys(contract: ContractRun) -> None:
    lines = (contract.run.run_dir / "index.jsonl").read_text().splitlines()
    for line in lines:
        record = json.loads(line)
        keys = SUCCESS_KEYS if record["status"] == "success" else FAILED_KEYS
        assert keys <= set(record), sorted(keys - set(record))
        if record["status"] == "success":
            assert record["metrics"] == {"used_tool": 1.0, "exact": 1.0}
            assert record["explanation"].startswith(f"expected {record['label']}")
            assert record["cost"]["total_usd"] == pytest.approx(2 * CALL_USD)
        else:
            assert record["failed_phase"] == "workflow"
            assert "crashing after a policy call" in record["traceback"]
            assert record["cost"]["total_usd"] == pytest.approx(CALL_USD)


@pytest.mark.parametrize("reader", ["EvalRun.rows", "read_index", "load_run"])
def test_every_python_reader_reads_the_same_rows(contract: ContractRun, reader: str) -> None:
    run = contract.run
    rows = {
        "EvalRun.rows": lambda: run.rows,
        "read_index": lambda: read_index(run.run_dir),
        "load_run": lambda: load_run(run.run_dir).rows,
    }[reader]()
    expected = _expected(run)
    for row in rows:
        want = expected[(row.row_index, row.run_index)]
        assert row.status == want["status"]
        assert row.label == want["label"]
        assert row.policy_calls == want["policy_calls"]
        assert row.prompt is not None
        assert "times" in row.prompt
        assert row.cost is not None
        assert row.cost["total_usd"] > 0
        if row.status == "success":
            assert row.reward == want["reward"]
            assert row.metrics == want["metrics"]
            assert row.explanation is not None
            assert row.explanation.startswith("expected")
            assert row.answer is not None
            assert "####" in row.answer
        else:
            assert row.failed_phase == "workflow"
            assert row.traceback is not None
            assert "RuntimeError" in row.traceback


def test_metrics_json_aggregates_every_grader_metric(contract: ContractRun) -> None:
    summary = json.loads((contract.run.run_dir / "metrics.json").read_text())["summary"]
    assert summary == contract.run.metrics
    per_key = summary["grader_metrics"]
    assert set(per_key) == {"used_tool", "exact"}
    for figures in per_key.values():
        assert figures["n"] == 4
        assert figures["mean"] == 1.0
        assert figures["ci95"] == [1.0, 1.0]
    assert (per_key["used_tool"]["threshold"], per_key["used_tool"]["pass_rate"]) == (1.0, 1.0)
    assert "pass_rate" not in per_key["exact"]  # no threshold set for it
    assert summary["cost"]["total_usd"] == pytest.approx(10 * CALL_USD)


def test_eval_show_list_and_compare_show_the_rows_facts(contract: ContractRun) -> None:
    run_dir = str(contract.run.run_dir)
    expected = _expected(contract.run)
    shown = _cli_json(contract, "show", run_dir)["data"]
    assert shown["grader_metrics"]["used_tool"]["mean"] == 1.0
    assert shown["cost_usd"] == pytest.approx(10 * CALL_USD)
    for row in shown["rows"]:
        want = expected[(row["row_index"], row["run_index"])]
        assert row["label"] == want["label"]
        assert row["cost_usd"] > 0
        if row["status"] == "success":
            assert row["metrics"] == want["metrics"]
            assert row["explanation"].startswith("expected")
        else:
            assert row["failed_phase"] == "workflow"
    one = _cli_json(contract, "show", run_dir, "--row", str(CRASH_ROW))["data"]
    assert one["label"] == expected[(CRASH_ROW, 0)]["label"]
    assert one["failed_phase"] == "workflow"
    assert [m["role"] for m in one["messages"]][-1] == "assistant"  # the partial transcript

    listed = _cli_json(contract, "list", "--runs-dir", str(contract.run.run_dir.parent))
    (item,) = listed["items"]
    assert item["cost_usd"] == pytest.approx(10 * CALL_USD)

    compared = _cli_json(contract, "compare", run_dir, run_dir)["data"]
    assert compared["metric_differences"]["used_tool"]["estimate"] == 0.0
    assert compared["cost_difference_usd"] == 0.0
    for pair in compared["rows"]:
        want = expected[(pair["source_row_index"], pair["run_index"])]
        assert pair["label"] == want["label"]


def _blob(html: str, name: str) -> Any:
    found = re.search(rf'<script type="application/octet-stream" id="{name}">([^<]*)<', html)
    assert found is not None, name
    return json.loads(gzip.decompress(base64.b64decode(found.group(1))))


def test_the_report_embeds_the_rows_facts(contract: ContractRun) -> None:
    run_dir = contract.run.run_dir
    result = contract.cli.run("--plain", "eval", "report", str(run_dir), cwd=contract.workspace)
    assert result.code == 0, result.stderr
    html = (run_dir / "report.html").read_text()
    rows = _blob(html, "rows-0")
    details = _blob(html, "details-0")
    expected = _expected(contract.run)
    for row, detail in zip(rows, details, strict=True):
        want = expected[(row["i"], row["s"])]
        assert row["l"] == want["label"]
        assert row["cu"] > 0  # cost per row
        if want["status"] == "success":
            assert detail["x"] == want["metrics"]
            assert detail["ex"].startswith("expected")
        else:
            assert detail["ph"] == "workflow"
            assert detail["m"], "the partial transcript of the crashed row"


def test_tool_errors_are_counted_filterable_and_shown(contract: ContractRun) -> None:
    """A tool call recorded as raising (record_tool_error, what the Strands and OpenAI Agents
    integrations call) is a fact of the row in every reader, not a silent reward-0 answer."""
    run = contract.run
    for row in load_run(run.run_dir, transcripts=False).rows:
        if row.row_index == TOOL_ERROR_ROW:
            assert row.tool_errors is not None
            assert [(e["tool"], e["message"]) for e in row.tool_errors] == [
                ("multiply", "ValueError: multiply is flaky")
            ]
        else:
            assert row.tool_errors is None
    summary = json.loads((run.run_dir / "metrics.json").read_text())["summary"]
    assert summary["tool_errors"] == {"rows": 2, "calls": 2, "by_tool": {"multiply": 2}}
    shown = _cli_json(contract, "show", str(run.run_dir), "--tool-errors")["data"]
    assert [(r["row_index"], r["tool_errors"]) for r in shown["rows"]] == [
        (TOOL_ERROR_ROW, 1),
        (TOOL_ERROR_ROW, 1),
    ]
    assert shown["tool_errors"]["rows"] == 2


def test_runs_frame_is_one_row_per_sample_with_metrics_cost_and_status(
    contract: ContractRun,
) -> None:
    from osmosis_ai.eval import runs_frame

    table = runs_frame(contract.run.run_dir.parent)
    assert len(table) == 2 * N_ROWS
    expected = _expected(contract.run)
    for record in table:
        want = expected[(record["row_index"], record["sample_index"])]
        assert (record["run"], record["status"], record["label"]) == (
            "contract",
            want["status"],
            want["label"],
        )
        assert record["cost_usd"] > 0
        if want["status"] == "success":
            assert record["outcome"] == "pass"
            assert (record["metric.used_tool"], record["metric.exact"]) == (1.0, 1.0)
        else:
            assert record["outcome"] == "failed"
            assert record["failed_phase"] == "workflow"
