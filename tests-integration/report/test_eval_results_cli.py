"""``osmosis eval list/show/compare/status/report`` end to end on two real runs (--json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from report_support import (
    FLIPPED_ROWS,
    GRADER_FAILURE_ROW,
    EvalRuns,
    _run,
    _workspace,
    run_against_a_dead_endpoint,
)

from osmosis_ai.testing import ScriptedPolicyServer


def _json(runs: EvalRuns, *args: str) -> Any:
    result = runs.cli.run("--json", "eval", *args, cwd=runs.workspace)
    assert result.code == 0, result.stderr
    return json.loads(result.stdout)


def _metrics(runs: EvalRuns, name: str) -> dict[str, Any]:
    return json.loads((runs.run_dir(name) / "metrics.json").read_text())["summary"]


def test_list_shows_both_local_runs(eval_runs: EvalRuns) -> None:
    listed = _json(eval_runs, "list")
    by_name = {item["name"]: item for item in listed["items"]}
    assert set(by_name) == {"wrong", "right"}
    for name, item in by_name.items():
        summary = _metrics(eval_runs, name)
        assert item["rows"] == 10
        assert item["mean_reward"] == summary["reward_stats"]["mean"]
        assert (item["status"], item["model"]) == ("partial", "scripted")
        assert item["rollout"] == "multiply-local-strands"
    assert listed["items"][0]["name"] == "right"  # newest first


def test_show_summary_rows_and_failures(eval_runs: EvalRuns) -> None:
    shown = _json(eval_runs, "show", "wrong")["data"]
    assert len(shown["rows"]) == 10
    assert shown["graded"] == 9
    assert shown["denominator"] == "9 graded (1 failed and 0 skipped excluded)"
    assert [r["row_index"] for r in shown["rows"] if r["passed"] is False] == FLIPPED_ROWS
    assert shown["failures"] == [
        "1 \N{MULTIPLICATION SIGN} KeyError: 'contnet' in grader.py:34 (agent_error)"
    ]
    failed = _json(eval_runs, "show", "wrong", "--failed")["data"]["rows"]
    assert [(r["row_index"], r["error_location"]) for r in failed] == [
        (GRADER_FAILURE_ROW, "grader.py:34")
    ]
    assert failed[0]["prompt"] == "What is 1 multiplied by -1?"
    # index.jsonl itself holds the facts (one record for every reader), the traceback included
    index = [json.loads(line) for line in (eval_runs.run_dir("wrong") / "index.jsonl").open()]
    assert [r["prompt"] for r in index][:2] == [
        "What is 2 multiplied by 3?",
        "What is 3 multiplied by 5?",
    ]
    assert [r["answer"] for r in index][:2] == ["#### 0", "#### 15"]
    assert [r["label"] for r in index][:2] == ["6", "15"]
    (failed_record,) = [r for r in index if r["status"] == "failed"]
    assert failed_record["traceback"].rstrip().endswith("KeyError: 'contnet'")
    assert failed_record["failed_phase"] == "grader"


def test_show_row_prints_the_transcript_with_tool_calls(eval_runs: EvalRuns) -> None:
    row = _json(eval_runs, "show", "wrong", "--row", "2")["data"]
    assert [m["role"] for m in row["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert row["messages"][2]["tool_calls"][0]["name"] == "multiply"
    assert row["answer"] == "#### 0"
    assert len(row["policy_calls_detail"]) == 2
    plain = eval_runs.cli.run(
        "--plain", "eval", "show", "wrong", "--row", "2", cwd=eval_runs.workspace
    )
    assert plain.code == 0, plain.stderr
    assert '→ tool call multiply({"a": 4, "b": 7})' in plain.stdout
    assert "── tool" in plain.stdout
    missing = eval_runs.cli.run(
        "--json", "eval", "show", "wrong", "--row", "99", cwd=eval_runs.workspace
    )
    assert missing.code == 1
    assert missing.error()["code"] == "NOT_FOUND"


def test_compare_lists_flips_and_a_paired_interval(eval_runs: EvalRuns) -> None:
    compared = _json(eval_runs, "compare", "wrong", "right")["data"]
    assert [p["source_row_index"] for p in compared["flipped_rows"]] == FLIPPED_ROWS
    assert {p["change"] for p in compared["flipped_rows"]} == {"improved"}
    assert all(p["delta"] == 1.0 for p in compared["flipped_rows"])
    assert (compared["improved"], compared["regressed"]) == (4, 0)
    assert compared["status_changed_rows"] == []  # row 6 failed in both runs
    assert compared["only_in_a"] == compared["only_in_b"] == []
    interval = compared["mean_difference"]
    assert interval["n"] == 9
    assert interval["estimate"] == 4 / 9
    assert 0 < interval["low"] < interval["estimate"] < interval["high"] <= 1


def test_compare_warns_when_the_runs_were_made_differently(
    eval_runs: EvalRuns, tmp_path: Path
) -> None:
    same = eval_runs.cli.run("--json", "eval", "compare", "wrong", "right", cwd=eval_runs.workspace)
    assert same.code == 0, same.stderr
    assert json.loads(same.stdout)["data"]["reproducibility_differences"] == []
    assert "RUNS_DIFFER" not in same.stderr
    # The same rollout code and dataset (another workspace from the same template), run with
    # a seed and a temperature: compared by folder with run "right".
    workspace = _workspace(eval_runs.cli, tmp_path)
    with ScriptedPolicyServer("multiply", max_recorded=0) as policy:
        flags = ("--json", "--no-report", "--seed", "7", "--temperature", "0.5")
        _run(eval_runs.cli, workspace, "seeded", policy, *flags)
    seeded = workspace / ".osmosis" / "evals" / "seeded"
    result = eval_runs.cli.run(
        "--json", "eval", "compare", str(eval_runs.run_dir("right")), str(seeded),
        cwd=eval_runs.workspace,
    )  # fmt: skip
    assert result.code == 0, result.stderr
    differences = json.loads(result.stdout)["data"]["reproducibility_differences"]
    assert {d.split(":")[0] for d in differences} == {
        "sampling_overrides", "seed", "sampling", "seeds",
    }  # fmt: skip
    assert "seed: null vs 7" in differences
    assert "seeds: [] vs [7]" in differences
    warnings = [
        json.loads(line)["warning"] for line in result.stderr.splitlines() if '"warning"' in line
    ]
    assert [w["code"] for w in warnings] == ["RUNS_DIFFER"] * len(differences)
    assert [w["message"] for w in warnings] == [
        f"the runs were not made the same way: {d}" for d in differences
    ]


def test_status_reads_a_local_run_without_login(eval_runs: EvalRuns) -> None:
    status = _json(eval_runs, "status", "right")["data"]
    assert (status["name"], status["failed"], status["graded"]) == ("right", 1, 9)
    assert status["mean_reward"] == _metrics(eval_runs, "right")["reward_stats"]["mean"]
    unknown = eval_runs.cli.run("--json", "eval", "show", "nope", cwd=eval_runs.workspace)
    assert unknown.code == 1
    assert "wrong" in unknown.error()["message"]  # lists the runs that exist


def test_a_run_stopped_by_a_dead_endpoint_is_listed_as_stopped_not_running(
    eval_runs: EvalRuns, tmp_path: Path
) -> None:
    workspace = _workspace(eval_runs.cli, tmp_path)
    stopped, base_url = run_against_a_dead_endpoint(eval_runs.cli, workspace, "dead")
    assert stopped.code == 1
    assert stopped.error()["code"] == "NETWORK"
    listed = eval_runs.cli.run("--json", "eval", "list", cwd=workspace)
    assert listed.code == 0, listed.stderr
    (item,) = json.loads(listed.stdout)["items"]
    assert (item["name"], item["status"], item["pending"]) == ("dead", "partial", 10)
    assert base_url in item["halt_reason"]
    assert "could not be reached" in item["halt_reason"]
    table = eval_runs.cli.run("eval", "list", cwd=workspace)  # what a person reads
    assert "partial, stopped" in table.stdout, table.stdout


def test_report_is_one_self_contained_file(eval_runs: EvalRuns) -> None:
    target = eval_runs.workspace / "out" / "r.html"
    written = _json(eval_runs, "report", "right", "--compare", "wrong", "-o", str(target))
    assert written["resource"]["path"] == str(target)
    assert written["resource"]["bytes"] == target.stat().st_size
    html = target.read_text()
    for external in ("<link", 'src="', "fetch(", "import("):
        assert external not in html
    again = eval_runs.workspace / "out" / "again.html"
    _json(eval_runs, "report", "right", "--compare", "wrong", "-o", str(again))
    assert again.read_bytes() == target.read_bytes()  # deterministic


def test_eval_run_prints_grouped_failures_with_the_traceback_and_writes_the_report(
    eval_runs: EvalRuns,
) -> None:
    console = eval_runs.right_console
    assert "mean reward 1.0000 over 9 graded, 9/9 passed" in console
    assert "1 \N{MULTIPLICATION SIGN} KeyError: 'contnet' in grader.py:34 (agent_error)" in console
    assert 'grader.py", line 34, in grade' in console
    assert console.rstrip().count("KeyError: 'contnet'") >= 2  # group line and traceback
    report = eval_runs.run_dir("right") / "report.html"
    assert f"report: {report}" in console
    assert report.read_text().startswith("<!DOCTYPE html>")
    # --no-report: no file, and the envelope says so
    assert not (eval_runs.run_dir("wrong") / "report.html").exists()
    assert eval_runs.wrong_output["resource"]["report_path"] is None


def test_show_filters_by_reward_and_limits_the_rows(eval_runs: EvalRuns) -> None:
    below = _json(eval_runs, "show", "wrong", "--below-threshold")["data"]
    assert [r["row_index"] for r in below["rows"]] == FLIPPED_ROWS
    assert {r["outcome"] for r in below["rows"]} == {"below threshold"}
    ranged = _json(eval_runs, "show", "wrong", "--reward-range", ":0.5")["data"]
    assert [r["row_index"] for r in ranged["rows"]] == FLIPPED_ROWS
    limited = _json(eval_runs, "show", "wrong", "--limit", "3")["data"]
    assert (len(limited["rows"]), limited["rows_matched"]) == (3, 10)
    result = eval_runs.cli.run("--plain", "eval", "show", "wrong", "--limit", "2",
                               cwd=eval_runs.workspace)  # fmt: skip
    assert result.code == 0, result.stderr
    assert "rows shown: 2 of 10 (--limit)" in result.stdout
    bad = eval_runs.cli.run("eval", "show", "wrong", "--reward-range", "1:0",
                            cwd=eval_runs.workspace)  # fmt: skip
    assert bad.code == 2
    assert "LOW:HIGH" in bad.stderr
