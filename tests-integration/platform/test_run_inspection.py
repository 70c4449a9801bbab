"""``eval|train info | logs | stop | list --all`` against the stand-in platform."""

from __future__ import annotations

import json
from pathlib import Path

from platform_harness import Cli, Platform  # pyright: ignore[reportMissingImports]


def test_info_prints_a_run_and_writes_it_with_output(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    run = platform.state.add_run("training", "big-train")
    shown = cli("--json", "train", "info", "big-train", cwd=tmp_path)
    assert shown.code == 0, shown.stderr
    assert shown.envelope()["data"]["id"] == run["id"]

    out = tmp_path / "run.json"
    written = cli("--json", "train", "info", run["id"], "-o", str(out), cwd=tmp_path)
    assert written.envelope()["operation"] == "train.info"
    assert json.loads(out.read_text(encoding="utf-8"))["name"] == "big-train"
    again = cli("--json", "train", "info", run["id"], "-o", str(out), cwd=tmp_path)
    assert again.code == 1
    assert again.error()["error"]["code"] == "CONFLICT"
    replaced = cli(
        "--json", "train", "info", run["id"], "-o", str(out), "--overwrite", cwd=tmp_path
    )
    assert replaced.code == 0, replaced.stderr
    alias = cli("--json", "train", "status", "big-train", cwd=tmp_path)  # earlier name, hidden
    assert alias.envelope()["data"]["id"] == run["id"]


def test_logs_pages_with_a_cursor(cli: Cli, platform: Platform, tmp_path: Path) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    run = platform.state.add_run("eval", "paged")
    for number in range(5):
        platform.state.append_log(run, f"line {number}")
    first = cli("--json", "eval", "logs", "paged", "--limit", "3", cwd=tmp_path).envelope()
    assert [e["message"] for e in first["items"]] == ["line 0", "line 1", "line 2"]
    assert (first["has_more"], first["finished"], first["run_status"]) == (True, False, "running")
    rest = cli(
        "--json", "eval", "logs", "paged", "--cursor", first["next_cursor"], cwd=tmp_path
    ).envelope()
    assert [e["message"] for e in rest["items"]] == ["line 3", "line 4"]
    plain = cli("--plain", "eval", "logs", "paged", "--limit", "1", cwd=tmp_path)
    assert plain.stdout.splitlines()[0].endswith("INFO  line 0")
    assert "--cursor 1" in plain.stderr


def test_logs_follow_streams_until_the_run_ends(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    state = platform.state
    run = state.add_run("eval", "live")
    state.append_log(run, "booting")
    follower = cli.popen("--json", "eval", "logs", "live", "--follow", cwd=tmp_path)
    try:
        assert state.wait_for_poll(run, 1), "the CLI never long-polled after the first line"
        state.append_log(run, "row 0 done")
        assert state.wait_for_poll(run, 2)
        state.append_log(run, "row 1 done")
        state.set_status(run, "succeeded")
        stdout, stderr = follower.communicate(timeout=30)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert follower.returncode == 0, stderr
    lines = [json.loads(line) for line in stdout.splitlines()]
    assert [line["log"]["message"] for line in lines[:-1]] == [
        "booting",
        "row 0 done",
        "row 1 done",
    ]
    assert lines[-1]["run"] == {"status": "succeeded", "finished": True, "cursor": "3"}
    assert all(line["schema_version"] == 1 for line in lines)


def test_stop_asks_first_and_refuses_an_ended_run(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    run = platform.state.add_run("training", "to-stop")
    unconfirmed = cli("--json", "train", "stop", "to-stop", cwd=tmp_path)
    assert unconfirmed.error()["error"]["code"] == "INTERACTIVE_REQUIRED"
    assert run["status"] == "running"
    assert not [r for r in platform.state.requests if r.method == "POST"]

    stopped = cli("--json", "train", "stop", "to-stop", "-y", cwd=tmp_path)
    assert stopped.code == 0, stopped.stderr
    envelope = stopped.envelope()
    assert (envelope["operation"], envelope["resource"]["status"]) == ("train.stop", "cancelled")
    assert run["status"] == "cancelled"
    again = cli("--json", "train", "stop", "to-stop", "-y", cwd=tmp_path)
    assert again.code == 1
    assert again.error()["error"]["code"] == "CONFLICT"


def test_list_all_follows_every_page(cli: Cli, platform: Platform, tmp_path: Path) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    for number in range(5):
        platform.state.add_run("eval", f"r{number}")
    listed = cli(
        "--json", "eval", "list", "--remote", "--limit", "2", "--all", cwd=tmp_path
    ).envelope()
    assert [r["name"] for r in listed["items"]] == ["r4", "r3", "r2", "r1", "r0"]
    assert (listed["has_more"], listed["next_offset"]) == (False, None)
    offsets = [r.query.get("offset") for r in platform.state.requests if r.method == "GET"]
    assert offsets == ["0", "2", "4"]
