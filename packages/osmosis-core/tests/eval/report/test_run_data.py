from __future__ import annotations

from pathlib import Path

import pytest

from osmosis_ai.errors import EvalError
from osmosis_ai.eval._impl.run_dir.layout import RunLock
from osmosis_ai.eval.report import (
    RunNotFoundError,
    find_runs,
    format_transcript,
    load_run,
    read_header,
)

from .run_builder import Row, write_run

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/ws/rollouts/m/grader.py", line 12, in grade\n'
    "    x = d['contnet']\n"
    "KeyError: 'contnet'\n"
)


def test_header_reads_provenance_without_leaking_url_credentials(tmp_path: Path) -> None:
    header = read_header(write_run(tmp_path, "a", [Row(0)]))
    assert (header.name, header.model, header.rollout, header.entrypoint) == (
        "a",
        "m",
        "multiply",
        "main.py",
    )
    assert header.base_url_host == "example.com:8443"  # no user:secret
    assert header.dataset_sha256 == "ab" * 32
    assert header.mean_reward == 1.0


def test_rows_carry_prompt_answer_label_and_the_grader_traceback(tmp_path: Path) -> None:
    rows = [
        Row(0),
        Row(1, status="failed", reward=None, error_type="agent_error", traceback=TRACEBACK),
    ]
    data = load_run(write_run(tmp_path, "a", rows))
    first, failed = data.rows
    assert (first.prompt, first.answer, first.label) == ("What is 2 times 0?", "#### 6", "6")
    assert first.metrics == {"exact": 1.0}
    assert first.policy_calls == 2
    assert failed.traceback == TRACEBACK
    assert failed.failed_phase == "grader"
    transcript = data.transcripts[(0, 0)]
    assert [m["role"] for m in transcript.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    text = format_transcript(transcript.messages, transcript.calls)
    assert '→ tool call multiply({"a": 2})' in text
    assert "(call 1: 5 ms, 10+2 tokens)" in text


def test_without_transcripts_the_facts_remain(tmp_path: Path) -> None:
    data = load_run(write_run(tmp_path, "a", [Row(0)]), transcripts=False)
    assert data.transcripts == {}
    assert data.rows[0].answer == "#### 6"


def test_a_run_still_in_its_first_session_is_read_from_the_journal(tmp_path: Path) -> None:
    run = write_run(tmp_path, "a", [Row(0, status="failed", reward=None)])
    (run / "index.jsonl").unlink()  # written only at the end of a session
    with (run / "events.jsonl").open("a") as fh:
        fh.write('{"row_index": 0, "run_index": 0, "status": "success", "reward": 1.0}\n')
        fh.write('{"row_index": 1, "run_')
    (row,) = load_run(run).rows  # the latest record wins; the torn line is ignored
    assert (row.status, row.reward) == ("success", 1.0)
    assert row.answer == "#### 6"  # the trajectory is found by its conventional name


def test_not_a_run_is_a_clear_eval_error(tmp_path: Path) -> None:
    with pytest.raises(RunNotFoundError, match="not an eval run directory") as info:
        read_header(tmp_path)
    assert isinstance(info.value, EvalError)


def test_find_runs_newest_first(tmp_path: Path) -> None:
    write_run(tmp_path, "old", [Row(0)])
    newer = write_run(tmp_path, "new", [Row(0)])
    metrics = (newer / "metrics.json").read_text().replace("00:00:01", "09:00:00")
    (newer / "metrics.json").write_text(metrics)
    assert [h.name for h in find_runs(tmp_path)] == ["new", "old"]
    assert find_runs(tmp_path / "missing") == []


def test_status_is_running_only_while_a_session_holds_the_run(tmp_path: Path) -> None:
    run = write_run(tmp_path, "a", [Row(0)])
    assert read_header(run).status == "partial"  # as write_run records it
    with RunLock(tmp_path, "a"):  # a later session of the same run (e.g. --retry-failed)
        assert read_header(run).status == "running"
        assert [h.status for h in find_runs(tmp_path)] == ["running"]
    assert read_header(run).status == "partial"
    # A session that never wrote its metrics (killed, or stopped before finalizing) and holds
    # no lock any more is not "running" for ever.
    (run / "metrics.json").unlink()
    assert read_header(run).status == "interrupted"
    with RunLock(tmp_path, "a"):
        assert read_header(run).status == "running"
