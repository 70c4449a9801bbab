"""The real ``osmosis`` CLI against the stand-in platform (docs/platform-api.md)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from platform_harness import Cli, Platform  # pyright: ignore[reportMissingImports]


def _posts(platform: Platform) -> list[str]:
    return [r.path for r in platform.state.requests if r.method == "POST"]


def test_login_whoami_logout(cli: Cli, platform: Platform, tmp_path: Path) -> None:
    login = cli("--json", "auth", "login", "--token", "-", cwd=tmp_path, stdin=platform.token)
    assert login.code == 0, login.stderr
    envelope = login.envelope()
    assert envelope["operation"] == "auth.login"
    assert envelope["resource"]["storage"] == "file"
    assert envelope["resource"]["user"]["email"] == "ada@example.com"
    credentials = cli.home / "credentials.json"
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    assert platform.token not in login.stdout + login.stderr

    whoami = cli("auth", "whoami", "--json", cwd=tmp_path)
    assert whoami.code == 0, whoami.stderr
    data = whoami.envelope()["data"]
    assert data["user"]["email"] == "ada@example.com"
    assert data["token_source"] == "file"
    sent = platform.state.requests[-1].headers
    assert sent["authorization"] == f"Bearer {platform.token}"
    assert sent["user-agent"].startswith("osmosis-cli/")

    logout = cli("--json", "auth", "logout", "--yes", cwd=tmp_path)
    assert logout.envelope()["resource"]["removed_from"] == ["file"]
    after = cli("--json", "auth", "whoami", cwd=tmp_path)
    assert after.code == 1
    assert after.error()["error"]["code"] == "AUTH_REQUIRED"


def test_login_with_a_rejected_token_stores_nothing(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    result = cli("--json", "auth", "login", "--token", "wrong", cwd=tmp_path)
    assert result.code == 1
    error = result.error()["error"]
    assert error["code"] == "AUTH_REQUIRED"
    assert error["details"]["status_code"] == 401
    assert not (cli.home / "credentials.json").exists()


def test_eval_submit_list_status(cli: Cli, platform: Platform, workspace: Path) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    secrets = workspace.parent / "secrets.env"
    secrets.write_text('OPENAI_API_KEY="sk-file"\nexport JUDGE_KEY=judge-file\n', encoding="utf-8")
    submit = cli(
        "eval", "submit", "configs/eval/calc.toml", "--yes", "--secrets-file", str(secrets),
        "--json", cwd=workspace,
    )  # fmt: skip
    assert submit.code == 0, submit.stderr
    envelope = submit.envelope()
    assert envelope["schema_version"] == 1
    assert envelope["operation"] == "eval.submit"
    run = envelope["resource"]
    assert run["status"] == "queued"
    assert run["config"]["rollout"] == "calc"
    assert "sk-file" not in submit.stdout + submit.stderr

    (post,) = [r for r in platform.state.requests if r.method == "POST"]
    assert post.path == "/api/cli/eval-runs"
    assert post.body["secrets"] == {
        "required": ["OPENAI_API_KEY", "JUDGE_KEY"],
        "provided": {"OPENAI_API_KEY": "sk-file", "JUDGE_KEY": "judge-file"},
    }
    assert post.body["experiment_config"]["model_path"] == "openai/gpt-5-mini"
    assert post.body["evaluation_config"]["n"] == 1
    assert "commit_sha" in post.body["git"]

    listed = cli("--json", "eval", "list", "--remote", cwd=workspace).envelope()
    assert listed["total_count"] == 1
    assert [item["id"] for item in listed["items"]] == [run["id"]]
    status = cli("eval", "status", run["name"], "--json", cwd=workspace).envelope()
    assert status["data"]["id"] == run["id"]


def test_missing_secrets_without_a_tty_lists_every_name(
    cli: Cli, platform: Platform, workspace: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    result = cli("--json", "eval", "submit", "configs/eval/calc.toml", "--yes", cwd=workspace)
    assert result.code == 1
    error = result.error()["error"]
    assert error["code"] == "INTERACTIVE_REQUIRED"
    assert error["details"]["missing"] == ["OPENAI_API_KEY", "JUDGE_KEY"]
    assert error["details"]["flags"] == ["--secrets-file"]
    assert _posts(platform) == []


def test_confirmation_is_required_without_yes(
    cli: Cli, platform: Platform, workspace: Path
) -> None:
    cli.env.update(OSMOSIS_TOKEN=platform.token, OPENAI_API_KEY="sk-env")
    result = cli("--plain", "train", "submit", "configs/training/calc.toml", cwd=workspace)
    assert result.code == 1
    assert "Use --yes" in result.stderr
    assert _posts(platform) == []


def test_train_submit_takes_secrets_from_the_environment(
    cli: Cli, platform: Platform, workspace: Path
) -> None:
    cli.env.update(OSMOSIS_TOKEN=platform.token, OPENAI_API_KEY="sk-env")
    args = ("--json", "train", "submit", "configs/training/calc.toml", "-y", "--name", "first")
    first = cli(*args, cwd=workspace)
    assert first.code == 0, first.stderr
    assert first.envelope()["operation"] == "train.submit"
    post = platform.state.requests[-1]
    assert post.path == "/api/cli/training-runs"
    assert post.body["training_config"]["lr"] == 1e-5
    assert post.body["secrets"]["provided"] == {"OPENAI_API_KEY": "sk-env"}
    missing = cli("--json", "train", "status", "nope", cwd=workspace)
    assert missing.error()["error"]["code"] == "NOT_FOUND"


def test_platform_errors_keep_the_platform_code(
    cli: Cli, platform: Platform, workspace: Path
) -> None:
    cli.env.update(OSMOSIS_TOKEN=platform.token, OPENAI_API_KEY="sk-env")
    platform.state.runs["training"].append({"id": "run_x", "name": "taken", "kind": "training"})
    args = ("--json", "train", "submit", "configs/training/calc.toml", "-y", "--name", "taken")
    again = cli(*args, cwd=workspace)
    assert again.code == 1
    error = again.error()["error"]
    assert error["code"] == "CONFLICT"
    assert error["details"]["platform_code"] == "name_taken"
    assert error["details"]["status_code"] == 409
    # the way out: another --name, or a look at the run that has it
    assert "another --name" in error["message"]
    assert "'osmosis train info taken'" in error["message"]
    platform.state.runs["eval"].append({"id": "run_y", "name": "taken", "kind": "eval"})
    cli.env["JUDGE_KEY"] = "judge-env"
    args = ("--json", "eval", "submit", "configs/eval/calc.toml", "-y", "--name", "taken")
    error = cli(*args, cwd=workspace).error()["error"]
    assert error["code"] == "CONFLICT"
    assert "'osmosis eval info taken'" in error["message"]


def test_submit_checks_the_configs_dataset_on_the_platform(
    cli: Cli, platform: Platform, workspace: Path
) -> None:
    cli.env.update(OSMOSIS_TOKEN=platform.token, OPENAI_API_KEY="sk-env")
    args = ("--json", "train", "submit", "configs/training/calc.toml", "-y")
    del platform.state.datasets["calc"]
    missing = cli(*args, cwd=workspace)
    assert missing.code == 1
    error = missing.error()["error"]
    assert error["code"] == "NOT_FOUND"
    assert "[experiment] dataset = 'calc'" in error["message"]
    assert "osmosis dataset upload data/calc.jsonl" in error["message"]
    assert _posts(platform) == []
    platform.state.add_dataset("calc", status="error")
    broken = cli(*args, cwd=workspace).error()["error"]
    assert broken["code"] == "VALIDATION"
    assert "'osmosis dataset logs calc'" in broken["message"]
    assert _posts(platform) == []
    platform.state.add_dataset("calc", status="processing")
    processing = cli(*args, cwd=workspace)
    assert processing.code == 0, processing.stderr  # may still become ready: a warning
    warning = [
        json.loads(line)["warning"]
        for line in processing.stderr.splitlines()
        if '"warning"' in line
    ]
    assert [w["code"] for w in warning if w["code"].startswith("DATASET")] == ["DATASET_NOT_READY"]
    assert _posts(platform) == ["/api/cli/training-runs"]


def test_submit_requires_login_before_anything_is_sent(
    cli: Cli, platform: Platform, workspace: Path
) -> None:
    result = cli("--json", "eval", "submit", "configs/eval/calc.toml", "-y", cwd=workspace)
    assert result.code == 1
    assert result.error()["error"]["code"] == "AUTH_REQUIRED"
    assert platform.state.requests == []


def test_list_pages_through_runs(cli: Cli, platform: Platform, tmp_path: Path) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    for number in range(3):
        platform.state.runs["eval"].append(
            {"id": f"run_{number}", "name": f"r{number}", "kind": "eval", "status": "queued"}
        )
    first = cli("--json", "eval", "list", "--remote", "--limit", "2", cwd=tmp_path).envelope()
    assert [r["id"] for r in first["items"]] == ["run_2", "run_1"]  # newest first
    assert (first["total_count"], first["has_more"], first["next_offset"]) == (3, True, 2)
    second = cli(
        "--json", "eval", "list", "--remote", "--limit", "2", "--offset", "2", cwd=tmp_path
    )
    page = second.envelope()
    assert [r["id"] for r in page["items"]] == ["run_0"]
    assert (page["has_more"], page["next_offset"]) == (False, None)
    plain = cli("--plain", "eval", "list", "--remote", cwd=tmp_path)
    assert plain.stdout.splitlines()[0] == "run_2\tr2\tqueued"


def test_secrets_file_from_stdin(cli: Cli, platform: Platform, workspace: Path) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    result = cli(
        "--json", "eval", "submit", "configs/eval/calc.toml", "-y", "--secrets-file", "-",
        cwd=workspace, stdin="OPENAI_API_KEY=sk-stdin\nJUDGE_KEY=j-stdin\n",
    )  # fmt: skip
    assert result.code == 0, result.stderr
    post = platform.state.requests[-1]
    assert post.body["secrets"]["provided"] == {
        "OPENAI_API_KEY": "sk-stdin",
        "JUDGE_KEY": "j-stdin",
    }


def test_workspace_flag_selects_a_workspace_for_every_request(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    default = cli("--json", "auth", "whoami", cwd=tmp_path).envelope()
    assert default["data"]["workspace"]["name"] == "stand-in"
    chosen = cli("--json", "auth", "whoami", "--workspace", "research", cwd=tmp_path).envelope()
    assert chosen["data"]["workspace"]["name"] == "research"
    listed = cli("--json", "dataset", "list", "--workspace=research", cwd=tmp_path)
    assert listed.code == 0, listed.stderr
    sent = [r.headers.get("x-osmosis-workspace") for r in platform.state.requests]
    assert sent == [None, "research", "research"]
    cli.env["OSMOSIS_WORKSPACE"] = "research"
    from_env = cli("--json", "auth", "whoami", cwd=tmp_path).envelope()
    assert from_env["data"]["workspace"]["name"] == "research"
    unknown = cli("--json", "--workspace", "nope", "dataset", "list", cwd=tmp_path)
    assert unknown.code == 1
    error = unknown.error()["error"]
    assert error["code"] == "NOT_FOUND"
    assert "'nope'" in error["message"]
    empty = cli("--json", "--workspace", " ", "dataset", "list", cwd=tmp_path)
    assert empty.code == 2
    assert "--workspace needs a workspace name" in empty.stderr


def test_eval_retry_resends_the_runs_own_secrets_and_never_prints_them(
    cli: Cli, platform: Platform, workspace: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    secrets = workspace.parent / "secrets.env"
    secrets.write_text("OPENAI_API_KEY=sk-file-1234\nJUDGE_KEY=judge-file-5678\n", encoding="utf-8")
    submit = cli(
        "--json", "eval", "submit", "configs/eval/calc.toml", "-y", "--secrets-file", str(secrets),
        cwd=workspace,
    )  # fmt: skip
    run = submit.envelope()["resource"]
    busy = cli("--json", "eval", "retry", run["name"], "-y", cwd=workspace)
    assert busy.error()["error"]["code"] == "CONFLICT"
    assert "still queued" in busy.error()["error"]["message"]

    found = platform.state.find_run("eval", run["id"])
    assert found is not None
    platform.state.set_status(found, "failed")
    found["failed_samples"] = 2
    missing = cli("--json", "eval", "retry", run["name"], "-y", cwd=workspace)
    assert missing.error()["error"]["code"] == "INTERACTIVE_REQUIRED"
    assert missing.error()["error"]["details"]["missing"] == ["JUDGE_KEY", "OPENAI_API_KEY"]
    unconfirmed = cli(
        "--json", "eval", "retry", run["name"], "--secrets-file", str(secrets), cwd=workspace
    )
    assert unconfirmed.error()["error"]["code"] == "INTERACTIVE_REQUIRED"
    assert platform.state.retried == []

    retried = cli(
        "--json", "eval", "retry", run["name"], "-y", "--secrets-file", str(secrets), cwd=workspace
    )
    assert retried.code == 0, retried.stderr
    envelope = retried.envelope()
    assert envelope["operation"] == "eval.retry"
    assert (envelope["resource"]["status"], envelope["resource"]["retryable_samples"]) == (
        "queued",
        2,
    )
    assert "2 failed and skipped samples" in envelope["message"]
    assert platform.state.retried == [
        (run["id"], {"JUDGE_KEY": "judge-file-5678", "OPENAI_API_KEY": "sk-file-1234"})
    ]
    assert "sk-file-1234" not in retried.stdout + retried.stderr
    unknown = cli("--json", "eval", "retry", "nope", "-y", cwd=workspace)
    assert unknown.error()["error"]["code"] == "NOT_FOUND"
