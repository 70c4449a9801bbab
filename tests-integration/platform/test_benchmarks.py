"""``osmosis benchmark list | info | submit`` and ``benchmark runs list | info | logs | stop |
download`` against the stand-in platform: happy paths, 401/403/404/5xx, a resumed download."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from platform_harness import Cli, Platform  # pyright: ignore[reportMissingImports]
from stand_in_state import Artifact, Fault, Pause  # pyright: ignore[reportMissingImports]

LEADERBOARD = [
    {"rank": 1, "tied": True, "agent": "codex (openai/gpt-5.2)",
     "pass_at_1": {"value": 0.62, "ci_low": 0.55, "ci_high": 0.69, "n": 178},
     "pass_at_k": [{"k": 1, "value": 0.62}, {"k": 3, "value": 0.74}]},
    {"rank": 1, "tied": True, "agent": "mini-swe-agent (openai/gpt-5-mini)",
     "pass_at_1": {"value": 0.58, "ci_low": 0.51, "ci_high": 0.65, "n": 178},
     "pass_at_k": [{"k": 1, "value": 0.58}]},
    {"rank": 3, "tied": False, "agent": "terminus-2 (qwen)",
     "pass_at_1": {"value": 0.31, "ci_low": 0.25, "ci_high": 0.38, "n": 178}, "pass_at_k": []},
]  # fmt: skip
CONFIG = """\
[experiment]
benchmark = "terminal-bench-2-1"

[tasks]
task_names = ["terminal-bench/git-multibranch"]

[execution]
attempts_per_task = 3
max_concurrent_attempts = 4

[secrets]
required = ["WEATHER_API_KEY"]

[env]
LOG_LEVEL = "info"

[[agents]]
harness = "codex"
name = "codex-gpt"
rollout = "calc"

[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"

[agents.env]
AGENT_MODE = "strict"
"""


@pytest.fixture
def catalog(platform: Platform, cli: Cli) -> Platform:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    for number, key in enumerate(("terminal-bench-2-1", "hle", "swe-bench-verified"), start=1):
        platform.state.benchmarks.append(
            {"id": f"bm_{number}", "key": key, "name": key.replace("-", " ").title(),
             "task_count": 89 * number, "run_count": 0, "last_run_status": None,
             "task_sets": [{"name": "parity", "task_count": 50, "recommended": True}]
             if key == "hle" else [],
             "leaderboard": LEADERBOARD if number == 1 else []}
        )  # fmt: skip
    return platform


def test_list_pages_and_info_shows_the_leaderboard_and_runs(
    cli: Cli, catalog: Platform, tmp_path: Path
) -> None:
    listed = cli("--json", "benchmark", "list", "--limit", "2", cwd=tmp_path).envelope()
    assert [b["key"] for b in listed["items"]] == ["terminal-bench-2-1", "hle"]
    assert (listed["total_count"], listed["next_offset"]) == (3, 2)
    every = cli("--json", "benchmark", "list", "--limit", "2", "--all", cwd=tmp_path)
    assert len(every.envelope()["items"]) == 3
    run = catalog.state.add_run("benchmark", "tb-1", status="succeeded")
    run["benchmark_id"] = "bm_1"
    catalog.state.add_run("benchmark", "other", status="running")["benchmark_id"] = "bm_2"
    info = cli("--json", "benchmark", "info", "terminal-bench-2-1", cwd=tmp_path).envelope()
    data = info["data"]
    assert [e["rank"] for e in data["leaderboard"]] == [1, 1, 3]
    assert [r["name"] for r in data["runs"]] == ["tb-1"]  # only this benchmark's runs
    plain = cli("--plain", "benchmark", "info", "terminal-bench-2-1", cwd=tmp_path)
    assert plain.code == 0, plain.stderr
    assert "#1*   codex (openai/gpt-5.2)  pass@1 62.0% (55.0%-69.0%)  pass@3 74.0%" in plain.stdout
    assert "#3    terminus-2 (qwen)  pass@1 31.0% (25.0%-38.0%)" in plain.stdout
    assert "* tied for first" in plain.stdout
    missing = cli("--json", "benchmark", "info", "nope", cwd=tmp_path)
    assert missing.code == 1
    error = missing.error()["error"]
    assert error["code"] == "NOT_FOUND"
    assert "osmosis benchmark list" in error["message"]


def test_submit_sends_the_platform_sections_and_the_secrets(
    cli: Cli, catalog: Platform, tmp_path: Path
) -> None:
    config = tmp_path / "bench.toml"
    config.write_text(CONFIG, encoding="utf-8")
    cli.env["OPENAI_API_KEY"] = "sk-test-value-123"
    secrets = "WEATHER_API_KEY=wk-secret-456\n"
    result = cli("--json", "benchmark", "submit", str(config), "-y", "--secrets-file", "-",
                 cwd=tmp_path, stdin=secrets)  # fmt: skip
    assert result.code == 0, result.stderr
    resource = result.envelope()["resource"]
    assert (resource["benchmark_name"], resource["status"]) == ("Terminal Bench 2 1", "queued")
    body = catalog.state.submitted_benchmarks[-1]
    assert body["experiment_config"] == {"benchmark": "terminal-bench-2-1"}
    assert body["tasks_config"] == {"task_names": ["terminal-bench/git-multibranch"]}
    assert body["execution_config"] == {
        "attempts_per_task": 3, "max_concurrent_attempts": 4, "max_retries": 0,
        "pass_threshold": 1.0,
    }  # fmt: skip
    assert body["env_config"] == {"LOG_LEVEL": "info"}
    agent = body["agents"][0]
    assert agent == {
        "harness": "codex",
        "model": {
            "type": "provider",
            "model": "openai/gpt-5.2",
            "api_key_secret": "OPENAI_API_KEY",
        },
        "env": {"AGENT_MODE": "strict"},
    }  # the local keys (name, rollout, entrypoint) stay here
    assert body["secrets"] == {
        "required": ["OPENAI_API_KEY", "WEATHER_API_KEY"],
        "provided": {"OPENAI_API_KEY": "sk-test-value-123", "WEATHER_API_KEY": "wk-secret-456"},
    }
    assert "sk-test-value-123" not in result.stdout + result.stderr

    # not interactive and a secret missing: says how to provide it, sends nothing
    del cli.env["OPENAI_API_KEY"]
    missing = cli("--json", "benchmark", "submit", str(config), "-y", cwd=tmp_path)
    assert missing.error()["error"]["code"] == "INTERACTIVE_REQUIRED"
    assert "--secrets-file" in missing.error()["error"]["message"]
    assert len(catalog.state.submitted_benchmarks) == 1


def test_submit_refuses_bad_configs_with_the_key_and_the_fix(
    cli: Cli, catalog: Platform, tmp_path: Path
) -> None:
    config = tmp_path / "bench.toml"
    config.write_text(CONFIG.replace("attempts_per_task = 3", "attempts_per_task = 0")
                      .replace('type = "provider"', 'type = "provider"\nbase_url = "http://x"'),
                      encoding="utf-8")  # fmt: skip
    bad = cli("--json", "benchmark", "submit", str(config), "-y", cwd=tmp_path)
    assert bad.code == 1
    error = bad.error()["error"]
    assert error["code"] == "VALIDATION"
    keys = [i["key"] for i in error["details"]["issues"]]
    assert keys == ["execution.attempts_per_task"]
    config.write_text(CONFIG.replace("[tasks]\n", '[tasks]\ntask_set = "tasks/"\n')
                      .replace('task_names = ["terminal-bench/git-multibranch"]\n', ""),
                      encoding="utf-8")  # fmt: skip
    folder = cli("--json", "benchmark", "submit", str(config), "-y", cwd=tmp_path)
    assert folder.error()["error"]["details"] == {"key": "tasks.task_set"}
    assert "osmosis benchmark run" in folder.error()["error"]["message"]
    assert catalog.state.submitted_benchmarks == []


def test_runs_list_info_logs_and_stop(cli: Cli, catalog: Platform, tmp_path: Path) -> None:
    done = catalog.state.add_run("benchmark", "tb-done", status="succeeded")
    done["leaderboard"] = LEADERBOARD[:1]
    live = catalog.state.add_run("benchmark", "tb-live", status="running")
    listed = cli("--json", "benchmark", "runs", "list", cwd=tmp_path).envelope()
    assert [r["name"] for r in listed["items"]] == ["tb-live", "tb-done"]
    info = cli("--plain", "benchmark", "runs", "info", "tb-done", cwd=tmp_path)
    assert info.code == 0, info.stderr
    assert "status: succeeded" in info.stdout
    assert "#1*   codex (openai/gpt-5.2)  pass@1 62.0%" in info.stdout
    for line in ("trial 1 started", "trial 1 passed"):
        catalog.state.append_log(live, line)
    logs = cli("--json", "benchmark", "runs", "logs", "tb-live", "--limit", "1", cwd=tmp_path)
    page = logs.envelope()
    assert [e["message"] for e in page["items"]] == ["trial 1 started"]
    assert (page["has_more"], page["next_cursor"]) == (True, "1")
    more = cli("--json", "benchmark", "runs", "logs", "tb-live", "--cursor", "1", cwd=tmp_path)
    assert [e["message"] for e in more.envelope()["items"]] == ["trial 1 passed"]
    stopped = cli("--json", "benchmark", "runs", "stop", "tb-live", "-y", cwd=tmp_path)
    assert stopped.code == 0, stopped.stderr
    assert stopped.envelope()["operation"] == "benchmark.runs.stop"
    assert live["status"] == "cancelled"
    again = cli("--json", "benchmark", "runs", "stop", "tb-live", "-y", cwd=tmp_path)
    assert again.error()["error"]["code"] == "CONFLICT"
    gone = cli("--json", "benchmark", "runs", "info", "nope", cwd=tmp_path)
    assert gone.error()["error"]["code"] == "NOT_FOUND"


@pytest.mark.parametrize(
    ("args", "path", "status", "code"),
    [
        (("benchmark", "list"), "/api/cli/benchmarks", 403, "PERMISSION_DENIED"),
        (("benchmark", "info", "hle"), "/api/cli/benchmarks/hle", 500, "PLATFORM_ERROR"),
        (("benchmark", "runs", "list"), "/api/cli/benchmark-runs", 503, "PLATFORM_ERROR"),
        (("benchmark", "runs", "logs", "x"), "/api/cli/benchmark-runs/x", 403, "PERMISSION_DENIED"),
        (("benchmark", "runs", "download", "x"), "/api/cli/benchmark-runs/x", 502,
         "PLATFORM_ERROR"),
    ],
)  # fmt: skip
def test_platform_failures_become_error_envelopes(
    cli: Cli, catalog: Platform, tmp_path: Path, args: tuple[str, ...], path: str, status: int,
    code: str,
) -> None:  # fmt: skip
    catalog.state.faults.append(Fault("GET", path, status, times=-1, retry_after="0"))
    result = cli("--json", *args, cwd=tmp_path)
    assert result.code == 1
    error = result.error()["error"]
    assert (error["code"], error["details"]["status_code"]) == (code, status)


def test_401_says_to_log_in_again(cli: Cli, catalog: Platform, tmp_path: Path) -> None:
    cli.env["OSMOSIS_TOKEN"] = "expired-token"
    for args in (("benchmark", "list"), ("benchmark", "runs", "info", "x")):
        result = cli("--json", *args, cwd=tmp_path)
        error = result.error()["error"]
        assert (error["code"], error["details"]["status_code"]) == ("AUTH_REQUIRED", 401)
        assert "osmosis auth login" in error["message"]


def _wait_for_size(path: Path, size: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.stat().st_size >= size):
        assert time.monotonic() < deadline, f"{path} never reached {size} bytes"
        time.sleep(0.01)


def test_runs_download_selects_types_and_resumes_after_a_kill(
    cli: Cli, catalog: Platform, tmp_path: Path
) -> None:
    run = catalog.state.add_run("benchmark", "tb-big", status="succeeded")
    results = os.urandom(3 * 1024 * 1024 + 7)
    catalog.state.artifacts[run["id"]] = [
        Artifact("summary", "summary.json", b'{"best_pass_at_1": 0.62}'),
        Artifact("results", "results.jsonl", results),
        Artifact("logs", "logs/run.log", b"trial 1 passed\n"),
    ]
    pause = Pause("results.jsonl", after_bytes=1024 * 1024 + 5)
    catalog.state.pauses.append(pause)
    part = tmp_path / "tb-big" / "results.jsonl.part"
    first = cli.popen("--json", "benchmark", "runs", "download", "tb-big", cwd=tmp_path)
    try:
        assert pause.reached.wait(30), "the download never started"
        _wait_for_size(part, pause.after_bytes)
        first.kill()
        first.wait(timeout=10)
    finally:
        if first.poll() is None:
            first.kill()
        first.communicate()
        pause.release.set()
    assert not (tmp_path / "tb-big" / "results.jsonl").exists()
    catalog.state.pauses.clear()
    second = cli("--json", "benchmark", "runs", "download", "tb-big", cwd=tmp_path)
    assert second.code == 0, second.stderr
    files = {Path(f["path"]).name: f["status"] for f in second.envelope()["resource"]["files"]}
    assert files == {"summary.json": "up_to_date", "results.jsonl": "resumed"}  # no logs: default
    assert (tmp_path / "tb-big" / "results.jsonl").read_bytes() == results
    every = cli("--json", "benchmark", "runs", "download", "tb-big", "--type", "all", cwd=tmp_path)
    assert (tmp_path / "tb-big" / "logs" / "run.log").read_bytes() == b"trial 1 passed\n"
    assert every.envelope()["operation"] == "benchmark.runs.download"
    bad = cli(
        "--json", "benchmark", "runs", "download", "tb-big", "--type", "metrics", cwd=tmp_path
    )
    error = bad.error()["error"]
    assert error["code"] == "VALIDATION"
    assert error["details"]["allowed"] == ["summary", "results", "artifacts", "logs", "all"]


def test_submit_errors_unknown_benchmark_and_a_5xx_not_retried(
    cli: Cli, catalog: Platform, tmp_path: Path
) -> None:
    config = tmp_path / "bench.toml"
    config.write_text(CONFIG.replace('"terminal-bench-2-1"', '"no-such-bench"'), encoding="utf-8")
    secrets = "OPENAI_API_KEY=sk-1\nWEATHER_API_KEY=wk-2\n"
    args = ("--json", "benchmark", "submit", str(config), "-y", "--secrets-file", "-")
    unknown = cli(*args, cwd=tmp_path, stdin=secrets)
    assert unknown.code == 1
    assert unknown.error()["error"]["code"] == "NOT_FOUND"
    config.write_text(CONFIG, encoding="utf-8")
    catalog.state.faults.append(Fault("POST", "/api/cli/benchmark-runs", 500, times=-1))
    failed = cli(*args, cwd=tmp_path, stdin=secrets)
    error = failed.error()["error"]
    assert (error["code"], error["details"]["status_code"]) == ("PLATFORM_ERROR", 500)
    posts = [r for r in catalog.state.requests
             if r.method == "POST" and r.path == "/api/cli/benchmark-runs"]  # fmt: skip
    assert len(posts) == 2  # one each: a POST is never retried on a 5xx
    assert "sk-1" not in failed.stderr
    assert catalog.state.runs["benchmark"] == []
