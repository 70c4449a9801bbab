"""``osmosis eval rubric`` end to end against the scripted judge over real HTTP (``--json``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_harness import RunCli  # pyright: ignore[reportMissingImports]

from osmosis_ai.testing import ScriptedPolicyServer, error_reply
from osmosis_ai.testing.judge import scripted_judge

RECORDS = [
    {
        "id": "right",
        "messages": [{"role": "user", "content": "6*7?"}, {"role": "assistant", "content": "42"}],
    },
    {"id": "wrong", "solution_str": "41", "ground_truth": "42"},
    {"conversation_id": "broken-judge", "solution_str": "JUDGE_FAILS"},
]


def _verdict(answer: str) -> object:
    if answer == "JUDGE_FAILS":
        return error_reply(503, "judge overloaded", headers={"Retry-After": "0"})
    return 1.0 if answer == "42" else 0.0


@pytest.fixture(autouse=True)
def no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OSMOSIS_JUDGE_CACHE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def judge() -> Iterator[ScriptedPolicyServer]:
    with ScriptedPolicyServer(scripted_judge(_verdict)) as server:  # type: ignore[arg-type]
        yield server


def _data(tmp_path: Path, records: list[dict[str, object]]) -> Path:
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def _args(data: Path, server: ScriptedPolicyServer, *extra: str) -> list[str]:
    return ["--json", "eval", "rubric", "-d", str(data), "-r", "1 if the answer is 42",
            "--model", "openai/judge", "--base-url", server.url, *extra]  # fmt: skip


def test_all_graded(run_cli: RunCli, tmp_path: Path, judge: ScriptedPolicyServer) -> None:
    rubric_file = tmp_path / "rubric.txt"
    rubric_file.write_text("Award 1 if the answer is 42.\n", encoding="utf-8")
    data = _data(tmp_path, RECORDS[:2])
    args = _args(data, judge, "-n", "2")
    args[args.index("-r") + 1] = f"@{rubric_file}"
    result = run_cli(*args)
    assert result.code == 0, result.stderr
    envelope = result.envelope()
    assert (envelope["operation"], envelope["status"]) == ("eval.rubric", "success")
    resource = envelope["resource"]
    assert (resource["graded"], resource["total_calls"], resource["judge_errors"]) == (4, 4, 0)
    assert resource["statistics"]["average"] == pytest.approx(0.5)
    assert [r["label"] for r in resource["records"]] == ["right", "wrong"]
    assert resource["records"][0]["scores"] == [1.0, 1.0]
    assert resource["judge"]["calls"] == 4
    assert resource["judge"]["prompt_tokens"] > 0
    assert len(judge.requests) == 4
    assert "Award 1 if the answer is 42." in judge.requests[0].messages[1]["content"]


def test_judge_errors_are_counted_apart(
    run_cli: RunCli, tmp_path: Path, judge: ScriptedPolicyServer
) -> None:
    result = run_cli(*_args(_data(tmp_path, RECORDS), judge))
    assert result.code == 1
    envelope = result.envelope()
    assert envelope["status"] == "partial"
    resource = envelope["resource"]
    assert (resource["graded"], resource["judge_errors"], resource["error_count"]) == (2, 1, 1)
    assert resource["statistics"]["average"] == pytest.approx(0.5)  # over the 2 graded only
    assert resource["statistics"]["min"] == 0.0
    broken = resource["records"][2]
    assert broken["label"] == "broken-judge"
    assert broken["scores"] == []
    assert broken["error_types"] == ["judge_error"]
    assert "HTTP 503" in broken["errors"][0]
    assert resource["judge"]["failed_calls"] == 1


def test_output_file_cache_and_deprecated_api_key(
    run_cli: RunCli, tmp_path: Path, judge: ScriptedPolicyServer
) -> None:
    data = _data(tmp_path, RECORDS[:2])
    cache = tmp_path / "cache"
    out_dir = tmp_path / "out/"
    first = run_cli(
        *_args(data, judge, "-o", f"{out_dir}/", "--cache", str(cache), "--api-key", "k-123")
    )
    assert first.code == 0, first.stderr
    assert [w["warning"]["code"] for w in first.warnings()] == ["DEPRECATION"]
    resource = first.envelope()["resource"]
    assert "records" not in resource
    written = json.loads(Path(resource["output_path"]).read_text(encoding="utf-8"))
    assert Path(resource["output_path"]).name == "rubric_eval_result.json"
    assert [r["scores"] for r in written["records"]] == [[1.0], [0.0]]
    calls = len(judge.requests)
    again = run_cli(*_args(data, judge, "--cache", str(cache)))
    assert again.code == 0
    assert len(judge.requests) == calls  # re-grading cost zero judge calls
    assert again.envelope()["resource"]["judge"]["cached_calls"] == 2


def test_missing_key_and_bad_input_are_validation_errors(run_cli: RunCli, tmp_path: Path) -> None:
    data = _data(tmp_path, RECORDS[:1])
    base = ["--json", "eval", "rubric", "-d", str(data), "-r", "rubric"]
    missing_key = run_cli(*base, "--model", "openai/gpt-5-mini")
    assert missing_key.code == 1
    assert missing_key.error()["error"]["code"] == "VALIDATION"
    assert "OPENAI_API_KEY" in missing_key.error()["error"]["message"]
    (tmp_path / "bad.jsonl").write_text('{"messages": []}\n', encoding="utf-8")
    bad = run_cli("--json", "eval", "rubric", "-d", str(tmp_path / "bad.jsonl"), "-r", "r",
                  "--model", "openai/m", "--api-key", "k")  # fmt: skip
    assert bad.code == 1
    assert "bad.jsonl:1: " in bad.error()["error"]["message"]
