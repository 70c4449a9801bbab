"""A judge grader evaluated by the real ``osmosis eval run``: the ``rubric-judge-local`` template
against a scripted policy and the scripted judge, over real HTTP.

Acceptance: 100 rows, the judge failing on 10 of them -> 90 graded, 10 ``judge_error`` counted
apart from agent failures, mean and pass rate over the 90 only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eval_support import Cli, read_jsonl

from osmosis_ai.testing import ScriptedPolicyServer, error_reply
from osmosis_ai.testing.judge import candidate_text, judge_verdict

TEMPLATE = "rubric-judge-local"


def _workspace(cli: Cli, root: Path, rows: list[dict[str, str]]) -> tuple[Path, Path]:
    root.mkdir()
    assert cli.run("init", str(root), cwd=root.parent).code == 0
    applied = cli.run("template", "apply", TEMPLATE, cwd=root)
    assert applied.code == 0, applied.stderr
    data = root / "data" / "judge-rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root / "configs" / "eval" / f"{TEMPLATE}.toml", data


def _judge(body: Mapping[str, Any]) -> Any:
    """Fails (HTTP 503, retry at once) on answers mentioning 'judge-fails'; else 1 for 'good'."""
    answer = candidate_text(body)
    if "judge-fails" in answer:
        return error_reply(503, "judge overloaded", headers={"Retry-After": "0"})
    return judge_verdict(1.0 if "good" in answer else 0.0)


def test_100_rows_with_the_judge_failing_on_10(cli: Cli, tmp_path: Path) -> None:
    rows = []
    for i in range(100):
        kind = "judge-fails" if i % 10 == 0 else ("good" if i % 3 else "bad")
        rows.append({"user_prompt": f"Say {kind} {i}", "ground_truth": kind})
    expected_graded = [r for r in rows if r["ground_truth"] != "judge-fails"]
    expected_mean = sum(r["ground_truth"] == "good" for r in expected_graded) / 90
    with (
        ScriptedPolicyServer("echo", max_recorded=0) as policy,
        ScriptedPolicyServer(_judge, max_recorded=0) as judge,
    ):
        config, data = _workspace(cli, tmp_path / "ws", rows)
        result = cli.run(
            "eval", "run", str(config), "--dataset", str(data), "--name", "j",
            "--base-url", policy.url, "--model", "scripted", "--json",
            cwd=tmp_path / "ws", env={"OSMOSIS_JUDGE_BASE_URL": judge.url}, timeout=300,
        )  # fmt: skip
        judge_peak = judge.max_in_flight
    assert result.code == 1, result.stderr  # partial: 10 items failed
    resource = result.json()["resource"]
    metrics = resource["metrics"]
    assert resource["total_work_items"] == 100
    assert (resource["succeeded"], resource["failed"]) == (90, 10)
    assert metrics["graded"] == 90
    assert metrics["failures_by_type"] == {"judge_error": 10}
    assert (metrics["judge_failures"], metrics["agent_failures"]) == (10, 0)
    assert metrics["infrastructure_failures"] == 0
    assert metrics["reward_stats"]["mean"] == expected_mean  # over the 90 graded only
    assert metrics["pass_rate"] == expected_mean  # pass_threshold 0.5, scores are 0 or 1
    assert {row["error_type"] for row in resource["failed_rows"]} == {"judge_error"}
    assert {row["row_index"] for row in resource["failed_rows"]} == set(range(0, 100, 10))
    index = read_jsonl(Path(resource["output_path"]) / "index.jsonl")
    assert sum(1 for item in index if item["reward"] is None) == 10
    # Judge usage per row and in total, apart from the policy's tokens.
    judged = [item["judge"] for item in index]
    assert all(j["calls"] == 1 for j in judged)
    assert sum(j["failed_calls"] for j in judged) == 10
    assert all(j["prompt_tokens"] > 0 for j in judged if not j["failed_calls"])
    assert metrics["judge"]["calls"] == 100
    assert metrics["judge"]["failed_calls"] == 10
    assert metrics["judge"]["total_tokens"] > 0
    policy_tokens = sum(item["tokens"] for item in index)
    assert metrics["tokens_used"] == policy_tokens  # the judge's tokens are not in it
    assert judge_peak > 1  # the graders' judge calls overlapped
