"""The controller end to end with a tiny core-only rollout in a real child process."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Mapping
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from osmosis_ai.errors import ConfigurationError
from osmosis_ai.eval import EvalRunFailed, UpstreamRejected
from osmosis_ai.eval._impl.finalize import _command_line
from osmosis_ai.eval._impl.plan.plan import EvalOptions, EvalPlanError, RunTuning, build_plan
from osmosis_ai.eval._impl.proxy.calls import RetryPolicy
from osmosis_ai.eval._impl.run_dir.journal import iter_records
from osmosis_ai.eval._impl.run_dir.manifest import ManifestMismatchError
from osmosis_ai.eval._impl.session import run_session
from osmosis_ai.eval.report import read_header
from osmosis_ai.testing import ErrorReply, ScriptedPolicyServer
from osmosis_ai.testing.responders import multiply_solver

FAST_RETRY = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02)
MakeWorkspace = Callable[..., Path]


def _plan(config: Path, item_deadline_sec: float | None = None, **kwargs: Any) -> Any:
    kwargs.setdefault("name", "t")
    tuning = RunTuning(retry_policy=FAST_RETRY, item_deadline_sec=item_deadline_sec)
    return build_plan(config, EvalOptions(**kwargs), tuning=tuning)


def _index(result: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (result.run_dir / "index.jsonl").read_text().splitlines()]


async def test_mock_policy_solves_every_row(workspace: MakeWorkspace) -> None:
    config = workspace(n_rows=3)
    result = await run_session(_plan(config, n=2))
    assert result.status == "success"
    assert (result.succeeded, result.failed, result.total_work_items) == (6, 0, 6)
    assert result.metrics["reward_stats"]["mean"] == 1.0
    assert result.metrics["pass_rate"] == 1.0
    assert [p["k"] for p in result.metrics["pass_at_k"]] == [1, 2]
    run = result.run_dir
    assert run == config.parent.parent.parent / ".osmosis" / "evals" / "t"
    for name in ("manifest.json", "events.jsonl", "index.jsonl", "metrics.json", "logs.txt"):
        assert (run / name).is_file(), name
    index = _index(result)
    assert {(i["row_index"], i["run_index"]) for i in index} == {
        (r, n) for r in range(3) for n in range(2)
    }
    assert all(i["reward"] == 1.0 and i["tokens"] > 0 for i in index)
    # the record carries the row's facts: the prompt and the final answer from its trajectory
    assert all(i["prompt"] and i["answer"] for i in index)
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["eval_run"]["status"] == "success"
    assert metrics["summary"]["graded"] == 6
    # provenance for the report's header: this process's command line and package versions
    assert metrics["eval_run"]["versions"]["osmosis-core"] == version("osmosis-core")
    assert metrics["eval_run"]["command_line"] == shlex.join(sys.argv)
    all_calls = [json.loads(line) for line in (run / "llm_calls.jsonl").read_text().splitlines()]
    assert len(all_calls) == 12  # 6 rollouts x (tool call turn + answer turn)
    calls = [c for c in all_calls if c["rollout_id"] == index[0]["rollout_id"]]
    assert len(calls) == 2
    assert all(c["status_code"] == 200 for c in calls)


async def test_two_worker_processes_solve_every_row(workspace: MakeWorkspace) -> None:
    config = workspace(n_rows=3)
    plan = _plan(config, n=2, workers=2)
    assert plan.workers == 2
    result = await run_session(plan)
    assert (result.status, result.succeeded, result.failed) == ("success", 6, 0)
    assert result.metrics["reward_stats"]["mean"] == 1.0


def test_auto_workers_skip_short_evals_and_respect_max_in_flight(
    workspace: MakeWorkspace,
) -> None:
    config = workspace(n_rows=3)
    assert _plan(config).workers == 1  # 3 work items: not worth a worker's start-up
    assert _plan(config, n=64, max_in_flight=1).workers == 1
    with pytest.raises(ConfigurationError, match="workers must be a positive integer"):
        _plan(config, workers=0)


async def test_rerun_resumes_only_missing_items(workspace: MakeWorkspace) -> None:
    config = workspace(n_rows=2)
    first = await run_session(_plan(config))
    again = await run_session(_plan(config))
    assert again.status == "success"
    assert again.dispatched == 0
    assert again.resumed == 2
    assert len(list(iter_records(first.run_dir / "events.jsonl"))) == 2


async def test_a_resume_after_a_torn_journal_tail_tells_its_rows_from_earlier_ones(
    workspace: MakeWorkspace,
) -> None:
    """A session's rows are the journal's records from the offset it began at (issue 39: no
    set of rollout ids); a torn last line is cut first, so the offset is where the new
    records really start."""
    config = workspace(n_rows=3)
    first = await run_session(_plan(config))
    events = first.run_dir / "events.jsonl"
    lines = events.read_bytes().splitlines(keepends=True)
    torn = json.loads(lines[2])["row_index"]  # records land in finishing order, not row order
    events.write_bytes(b"".join(lines[:2]) + lines[2][:25])  # the third record torn mid-write
    again = await run_session(_plan(config))
    assert (again.status, again.dispatched, again.resumed) == ("success", 1, 2)
    assert [row.resumed for row in again.rows] == [i != torn for i in range(3)]
    assert all(row.trajectory_filename for row in again.rows)
    assert len(list(iter_records(events))) == 3


async def test_a_corrupt_journal_line_is_skipped_and_reported_on_resume(
    workspace: MakeWorkspace,
) -> None:
    config = workspace(n_rows=2)
    first = await run_session(_plan(config))
    events = first.run_dir / "events.jsonl"
    lines = events.read_bytes().splitlines(keepends=True)
    events.write_bytes(lines[0] + b"\x00" * 16 + b"\n" + b"\xff\xfe{\n")  # row 2 is lost
    notices: list[Any] = []
    plan = _plan(config)
    again = await run_session(plan, notices.append)
    assert again.status == "success"
    assert (again.resumed, again.dispatched) == (1, 1)
    skipped = [u for u in notices if u.kind == "notice" and "unreadable" in (u.message or "")]
    assert len(skipped) == 1
    assert skipped[0].details["lines"] == 2
    assert "skipped 2 unreadable line(s)" in (first.run_dir / "logs.txt").read_text()


async def test_changed_input_is_refused_and_fresh_archives(workspace: MakeWorkspace) -> None:
    config = workspace(n_rows=2)
    await run_session(_plan(config))
    data = config.parent.parent.parent / "data" / "rows.jsonl"
    data.write_text(
        data.read_text() + json.dumps({"user_prompt": "9 times 9", "ground_truth": "81"}) + "\n"
    )
    with pytest.raises(ManifestMismatchError, match="changed: dataset") as info:
        await run_session(_plan(config))
    assert info.value.changed == ["dataset"]
    with pytest.raises(ManifestMismatchError, match="n"):
        await run_session(_plan(config, limit=2, n=3))

    fresh = await run_session(_plan(config, fresh=True))
    assert fresh.total_work_items == 3
    assert fresh.succeeded == 3
    assert fresh.archived_to is not None
    assert fresh.archived_to.name.startswith("t.archive-")


async def test_wrong_policy_scores_zero(workspace: MakeWorkspace) -> None:
    def wrong(body: Mapping[str, Any]) -> Any:
        reply = multiply_solver(body)
        if reply.content and reply.content.startswith("####"):
            return reply.content + "1"  # off by a digit
        return reply

    async with ScriptedPolicyServer(wrong) as policy:
        config = workspace(n_rows=2)
        result = await run_session(_plan(config, model="m", base_url=policy.url))
    assert result.status == "success"
    assert result.failed == 0
    assert result.metrics["reward_stats"]["mean"] == 0.0
    assert result.metrics["pass_rate"] == 0.0


async def test_credentials_in_the_base_url_never_reach_files(workspace: MakeWorkspace) -> None:
    async with ScriptedPolicyServer(multiply_solver) as policy:
        config = workspace(n_rows=2)
        secret_url = policy.url.replace("http://", "http://alice:pa55word@") + "?api_key=sekrit"
        result = await run_session(_plan(config, model="m", base_url=secret_url))
    assert result.succeeded == 2
    for path in result.run_dir.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert "pa55word" not in text, path
            assert "sekrit" not in text, path
    manifest = (result.run_dir / "manifest.json").read_text()
    assert "***@127.0.0.1" in manifest


async def test_policy_errors_are_failures_not_zero_and_retry_failed(
    workspace: MakeWorkspace,
) -> None:
    broken = {"on": True}

    def flaky(body: Mapping[str, Any]) -> Any:
        return ErrorReply(400, "invalid tool schema") if broken["on"] else multiply_solver(body)

    async with ScriptedPolicyServer(flaky) as policy:
        config = workspace(n_rows=2)
        result = await run_session(_plan(config, model="m", base_url=policy.url))
        assert result.status == "partial"
        assert result.failed == 2
        assert result.succeeded == 0
        assert result.metrics["reward_stats"]["mean"] is None  # failures are not reward 0
        assert result.metrics["failures_by_type"] == {"http_error": 2}
        assert result.failed_rows[0].error_type == "http_error"
        # Without --retry-failed a rerun has nothing to do; with it, the failures run again.
        assert (await run_session(_plan(config, model="m", base_url=policy.url))).dispatched == 0
        broken["on"] = False
        retried = await run_session(
            _plan(config, model="m", base_url=policy.url, retry_failed=True)
        )
    assert retried.status == "success"
    assert retried.dispatched == 2
    assert retried.succeeded == 2
    records = list(iter_records(retried.run_dir / "events.jsonl"))
    assert [r["status"] for r in records] == ["failed", "failed", "success", "success"]


async def test_agent_timeout_category_is_kept(workspace: MakeWorkspace) -> None:
    config = workspace(
        n_rows=1, mode="slow", env={"TINY_SLEEP": "3"}, evaluation="agent_workflow_timeout_s = 0.2"
    )
    result = await run_session(_plan(config))
    assert result.failed == 1
    assert result.failed_rows[0].error_type == "timeout"


async def test_server_that_cannot_start_reports_its_stderr(workspace: MakeWorkspace) -> None:
    config = workspace(n_rows=1, mode="crash-on-start")
    with pytest.raises(EvalRunFailed, match="refusing to start") as info:
        await run_session(_plan(config))
    assert info.value.result is not None
    assert info.value.result.pending == 1


async def test_server_crash_mid_run_halts_and_leaves_items_pending(
    workspace: MakeWorkspace,
) -> None:
    config = workspace(n_rows=3, mode="crash-on-rollout")
    result = await run_session(_plan(config, max_in_flight=1))
    assert result.status == "partial"
    assert result.pending == 3
    assert result.failed == 0
    assert result.halt_reason is not None
    assert "crashing the server on purpose" in result.halt_reason


def test_plan_errors(workspace: MakeWorkspace, tmp_path: Path) -> None:
    config = workspace(n_rows=2)
    with pytest.raises(EvalPlanError, match="out of range"):
        _plan(config, rows="5")
    with pytest.raises(EvalPlanError, match="is not a file"):
        _plan(config, dataset=tmp_path / "missing.jsonl")
    with pytest.raises(EvalPlanError, match="cannot tell where to send"):
        _plan(config, model="gpt-x")
    with pytest.raises(EvalPlanError, match="invalid run name"):
        _plan(config, name="../x")
    secrets_config = config.read_text().replace(
        "required = []", 'required = ["TINY_SECRET_NOT_SET"]'
    )
    config.write_text(secrets_config)
    os.environ.pop("TINY_SECRET_NOT_SET", None)
    with pytest.raises(EvalPlanError, match="TINY_SECRET_NOT_SET"):
        _plan(config)


async def test_item_deadline_fails_the_item_as_a_timeout(
    workspace: MakeWorkspace,
) -> None:
    config = workspace(n_rows=1, mode="slow", env={"TINY_SLEEP": "30"})
    result = await run_session(_plan(config, item_deadline_sec=0.5))
    assert result.failed == 1
    failure = result.failed_rows[0]
    assert failure.error_type == "timeout"
    assert "per-item deadline" in (failure.error_message or "")


async def test_secrets_never_reach_the_run_files(
    workspace: MakeWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-very-secret-value-42"
    monkeypatch.setenv("TINY_UPSTREAM_KEY", secret)
    async with ScriptedPolicyServer("multiply") as policy:
        config = workspace(n_rows=2)
        result = await run_session(
            _plan(config, model="m", base_url=policy.url, api_key_env="TINY_UPSTREAM_KEY")
        )
        assert {r.bearer_token for r in policy.requests} == {secret}  # the key was used upstream
    assert result.succeeded == 2
    leaked = _files_containing(result.run_dir, secret)
    assert leaked == []


def _files_containing(root: Path, text: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and text in p.read_text(errors="replace")]


@pytest.mark.parametrize(
    ("status", "hint"), [(401, "check the API key"), (404, "check the model name")]
)
async def test_preflight_stops_a_run_the_upstream_would_reject(
    workspace: MakeWorkspace, status: int, hint: str
) -> None:
    async with ScriptedPolicyServer(lambda body: ErrorReply(status, "nope")) as policy:
        config = workspace(n_rows=2)
        plan = _plan(config, model="m", base_url=policy.url)
        with pytest.raises(UpstreamRejected, match=hint) as info:
            await run_session(plan)
        assert len(policy.requests) == 1  # one preflight call, no rollout ran
    assert info.value.status_code == status
    assert not (plan.run_dir / "events.jsonl").exists() or not list(
        iter_records(plan.run_dir / "events.jsonl")
    )
    # The session still ends on file: `eval list` shows it partial (both items pending) with
    # the reason, not "running" for ever.
    metrics = json.loads((plan.run_dir / "metrics.json").read_text())
    assert metrics["eval_run"]["status"] == "partial"
    assert hint in metrics["eval_run"]["halt_reason"]
    header = read_header(plan.run_dir)
    assert (header.status, header.pending) == ("partial", 2)
    assert header.halt_reason is not None
    assert hint in header.halt_reason


def test_the_recorded_command_line_masks_url_credentials_and_secret_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv = ["osmosis", "eval", "run", "c.toml", "--base-url", "https://bob:pw@llm.example/v1"]
    monkeypatch.setattr(sys, "argv", [*argv, "--note", "sk-live-123456"])
    plan = SimpleNamespace(
        upstream=SimpleNamespace(api_key="sk-live-123456"), secrets={"TOKEN": "tok-98765"}
    )
    recorded = _command_line(plan)  # type: ignore[arg-type]
    assert recorded == ("osmosis eval run c.toml --base-url https://***@llm.example/v1 --note ***")


async def test_a_rerun_of_a_finished_run_changes_nothing_on_disk(
    workspace: MakeWorkspace,
) -> None:
    """No new row, no new figure: index.jsonl, metrics.json (its provenance too: started at,
    duration, command line), the manifest and the trajectories stay byte for byte, and the
    result says so (``unchanged``); only the session log records that it looked."""
    config = workspace(n_rows=2, mode="noop")
    first = await run_session(_plan(config, model="mock"))
    assert first.status == "success"
    assert not first.unchanged

    def files() -> dict[str, tuple[bytes, int]]:
        return {
            str(p.relative_to(first.run_dir)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(first.run_dir.rglob("*"))
            if p.is_file() and p.name != "logs.txt"
        }

    before = files()
    again = await run_session(_plan(config, model="mock"))
    assert again.unchanged
    assert (again.status, again.dispatched, again.succeeded) == ("success", 0, 2)
    assert again.duration_ms == pytest.approx(first.duration_ms, abs=0.1)
    assert files() == before


async def test_max_failures_sets_a_stop_code_the_files_show(workspace: MakeWorkspace) -> None:
    config = workspace(n_rows=4)
    with_errors = ScriptedPolicyServer(lambda body: ErrorReply(400, "no"))
    async with with_errors as policy:
        result = await run_session(
            _plan(config, model="m", base_url=policy.url, max_failures=1, max_in_flight=1)
        )
    assert (result.status, result.stop_code) == ("partial", "max_failures")
    assert result.pending > 0
    written = json.loads((result.run_dir / "metrics.json").read_text())["eval_run"]
    assert written["stop_code"] == "max_failures"
    assert read_header(result.run_dir).stop_code == "max_failures"
