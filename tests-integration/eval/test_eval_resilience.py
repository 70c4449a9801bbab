"""`osmosis eval run` as a real process: crashes, kill -9, resume locks, upstream retries."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from eval_support import Cli, pid_alive, read_jsonl, server_pid, write_tiny_workspace

from osmosis_ai.testing import ErrorReply, ScriptedPolicyServer
from osmosis_ai.testing.responders import multiply_solver


def _wait_for(condition: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_kill_9_then_rerun_loses_nothing_and_repeats_nothing(cli: Cli, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    config = write_tiny_workspace(ws, n_rows=12, mode="slow", env={"TINY_SLEEP": "0.25"})
    args = ("eval", "run", str(config), "--name", "k", "--max-in-flight", "2", "--json")
    run_dir = ws / ".osmosis" / "evals" / "k"
    events = run_dir / "events.jsonl"

    proc = cli.popen(*args, cwd=ws)
    try:
        _wait_for(lambda: len(read_jsonl(events)) >= 3 or proc.poll() is not None, "3 results")
        assert proc.poll() is None, proc.communicate()[1]
        pid = server_pid(run_dir)
        proc.kill()  # SIGKILL: no cleanup code runs in the eval process
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    before = read_jsonl(events)
    assert 3 <= len(before) < 12
    assert pid is not None
    _wait_for(lambda: not pid_alive(pid), "the orphaned rollout server to exit", timeout=30)

    result = cli.run(*args, cwd=ws)
    assert result.code == 0, result.stderr
    resource = result.json()["resource"]
    assert resource["succeeded"] == 12
    assert resource["resumed"] == len(before)
    assert resource["dispatched"] == 12 - len(before)
    after = read_jsonl(events)
    assert after[: len(before)] == before  # nothing lost
    keys = [(r["row_index"], r["run_index"]) for r in after]
    assert len(keys) == len(set(keys)) == 12  # nothing completed was repeated


def test_changed_inputs_are_refused_by_name(cli: Cli, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    config = write_tiny_workspace(ws, n_rows=2, mode="noop")
    args = ("eval", "run", str(config), "--name", "lock", "--json")
    assert cli.run(*args, cwd=ws).code == 0

    (ws / "rollouts" / "tiny" / "helper.py").write_text("X = 1\n")
    refused = cli.run(*args, cwd=ws)
    assert refused.code == 1
    error = refused.error()
    assert error["code"] == "CONFLICT"
    assert error["details"]["changed"] == ["rollout"]
    assert "--fresh" in error["message"]

    fresh = cli.run(*args, "--fresh", cwd=ws)
    assert fresh.code == 0, fresh.stderr
    assert fresh.json()["resource"]["archived_to"] is not None


def test_upstream_429_and_500_are_retried(cli: Cli, tmp_path: Path) -> None:
    calls = {"n": 0}

    def flaky(body: Mapping[str, Any]) -> Any:
        if "tools" not in body:  # the controller's model preflight
            return multiply_solver(body)
        calls["n"] += 1
        if calls["n"] == 1:
            return ErrorReply(429, "rate limited")
        if calls["n"] == 2:
            return ErrorReply(500, "overloaded")
        return multiply_solver(body)

    ws = tmp_path / "ws"
    config = write_tiny_workspace(ws, n_rows=1)
    with ScriptedPolicyServer(flaky) as policy:
        result = cli.run(
            "eval",
            "run",
            str(config),
            "--name",
            "r",
            "--base-url",
            policy.url,
            "--model",
            "m",
            "--json",
            cwd=ws,
        )
    assert result.code == 0, result.stderr
    resource = result.json()["resource"]
    assert resource["succeeded"] == 1
    assert resource["metrics"]["reward_stats"]["mean"] == 1.0
    log = (ws / ".osmosis" / "evals" / "r" / "logs.txt").read_text()
    assert log.count("upstream_retry") == 2
    assert "HTTP 429" in log
    assert "HTTP 500" in log


def test_server_crash_at_start_shows_its_stderr(cli: Cli, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    config = write_tiny_workspace(ws, n_rows=1, mode="crash-on-start")
    result = cli.run("eval", "run", str(config), "--name", "c", cwd=ws)
    assert result.code == 1
    assert "exited during start-up" in result.stderr
    assert "refusing to start (TINY_MODE=crash-on-start)" in result.stderr


def test_server_crash_mid_run_is_partial_with_stderr_tail(cli: Cli, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    config = write_tiny_workspace(ws, n_rows=2, mode="crash-on-rollout")
    result = cli.run("eval", "run", str(config), "--name", "c", "--json", cwd=ws)
    assert result.code == 1
    envelope = result.json()
    assert envelope["status"] == "partial"
    resource = envelope["resource"]
    assert resource["pending"] == 2
    assert resource["failed"] == 0  # a crashed server is not the agent's failure
    assert "crashing the server on purpose" in resource["halt_reason"]


def test_wrong_policy_scores_zero(cli: Cli, tmp_path: Path) -> None:
    def wrong(body: Mapping[str, Any]) -> Any:
        reply = multiply_solver(body)
        return "#### 0" if reply.content else reply

    ws = tmp_path / "ws"
    config = write_tiny_workspace(ws, n_rows=2)
    with ScriptedPolicyServer(wrong) as policy:
        result = cli.run(
            "eval", "run", str(config), "--base-url", policy.url, "--model", "m", "--json", cwd=ws
        )
    assert result.code == 0, result.stderr
    metrics = result.json()["resource"]["metrics"]
    assert metrics["reward_stats"]["mean"] == 0.0
    assert metrics["pass_rate"] == 0.0


def test_isolated_runs_the_rollout_in_its_own_environment(cli: Cli, tmp_path: Path) -> None:
    import shutil

    if shutil.which("uv") is None and not Path(sys.executable).with_name("uv").exists():
        pytest.skip("uv is not installed")
    ws = tmp_path / "ws"
    core = Path(__file__).resolve().parents[2] / "packages" / "osmosis-core"
    config = write_tiny_workspace(ws, n_rows=2, core_path=core)
    result = cli.run(
        "eval", "run", str(config), "--isolated", "--name", "iso", "--json", cwd=ws, timeout=300
    )
    assert result.code == 0, result.stderr
    assert result.json()["resource"]["succeeded"] == 2
    venv_python = ws / "rollouts" / "tiny" / ".venv" / "bin" / "python"
    assert venv_python.exists()  # uv built the rollout's own environment
    log = (ws / ".osmosis" / "evals" / "iso" / "logs.txt").read_text()
    assert "uv run --quiet --project" in log


def test_ctrl_c_stops_cleanly_and_leaves_a_resumable_run(cli: Cli, tmp_path: Path) -> None:
    import signal

    ws = tmp_path / "ws"
    config = write_tiny_workspace(ws, n_rows=30, mode="slow", env={"TINY_SLEEP": "0.3"})
    # ~28 rows (about 4 s at 2 in flight) still to run when SIGINT is sent: with 10 rows a slow
    # machine could finish the last 8 before the signal arrived, and the run then ended 0.
    args = ("eval", "run", str(config), "--name", "int", "--max-in-flight", "2", "--json")
    run_dir = ws / ".osmosis" / "evals" / "int"
    proc = cli.popen(*args, cwd=ws)
    try:
        _wait_for(
            lambda: len(read_jsonl(run_dir / "events.jsonl")) >= 2 or proc.poll() is not None,
            "2 results",
        )
        pid = server_pid(run_dir)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    envelope = json.loads(stdout)
    assert envelope["status"] == "partial"
    resource = envelope["resource"]
    assert resource["pending"] > 0
    assert resource["failed"] == 0  # interrupted items are pending, not failures
    assert pid is not None
    assert not pid_alive(pid)  # the rollout server was stopped before the CLI exited

    rerun = cli.run(*args, cwd=ws)
    assert rerun.code == 0, rerun.stderr
    assert rerun.json()["resource"]["succeeded"] == 30
    keys = [(r["row_index"], r["run_index"]) for r in read_jsonl(run_dir / "events.jsonl")]
    assert len(keys) == len(set(keys)) == 30
