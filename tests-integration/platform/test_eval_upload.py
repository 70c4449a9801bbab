"""``eval upload``: a local run made by the real engine (``--model mock``) into the stand-in
platform; interrupted and resumed; refused twice without ``--replace``."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from platform_harness import Cli, Platform  # pyright: ignore[reportMissingImports]
from stand_in_state import Fault  # pyright: ignore[reportMissingImports]

TEMPLATE = "multiply-local-plain"


@pytest.fixture
def local_run(cli: Cli, platform: Platform, tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    assert cli("init", str(ws), cwd=tmp_path).code == 0
    assert cli("template", "apply", TEMPLATE, cwd=ws).code == 0
    made = cli(
        "--json", "eval", "run", f"configs/eval/{TEMPLATE}.toml", "--model", "mock",
        "--rows", "0-2", "--name", "calc-local", cwd=ws,
    )  # fmt: skip
    assert made.code == 0, made.stderr
    cli.env["OSMOSIS_TOKEN"] = platform.token
    return ws


def _puts(platform: Platform) -> list[str]:
    return [r.path.rsplit("/files/", 1)[1] for r in platform.state.requests if r.method == "PUT"]


def test_upload_sends_every_file_then_refuses_a_second_import(
    cli: Cli, platform: Platform, local_run: Path
) -> None:
    run_dir = local_run / ".osmosis" / "evals" / "calc-local"
    done = cli("--json", "eval", "upload", "calc-local", cwd=local_run)
    assert done.code == 0, done.stderr
    resource = done.envelope()["resource"]
    assert resource["eval_run_name"] == "calc-local-imported"
    assert resource["sent"] == resource["files"] > 3
    (session,) = platform.state.imports.values()
    local = {
        p.relative_to(run_dir).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in run_dir.rglob("*")
        if p.is_file() and not p.name.startswith(".") and ".locks" not in p.parts
    }
    assert {path: f["sha256"] for path, f in session["files"].items()} == local
    assert "manifest.json" in local
    assert "index.jsonl" in local
    run = platform.state.find_run("eval", "calc-local-imported")
    assert run is not None
    assert run["source"] == "local"

    again = cli("--json", "eval", "upload", str(run_dir), cwd=local_run)
    assert again.code == 1
    assert again.error()["error"]["code"] == "CONFLICT"
    replaced = cli("--json", "eval", "upload", str(run_dir), "--replace", cwd=local_run)
    assert replaced.code == 0, replaced.stderr


def test_an_interrupted_upload_resumes_without_resending(
    cli: Cli, platform: Platform, local_run: Path
) -> None:
    every_file = Fault("PUT", "/api/cli/eval-runs/imports/imp_", 500, times=-1)
    platform.state.faults.append(every_file)
    failed = cli("--json", "eval", "upload", "calc-local", cwd=local_run)
    assert failed.code == 1
    assert failed.error()["error"]["code"] == "PLATFORM_ERROR"
    (session,) = platform.state.imports.values()
    assert {f["state"] for f in session["files"].values()} == {"pending"}

    # the platform holds two files (e.g. a previous attempt got that far), then recovers
    platform.state.faults.clear()
    held = sorted(session["files"])[:2]
    for path in held:
        session["files"][path]["state"] = "uploaded"
    before = len(platform.state.requests)
    resumed = cli("--json", "eval", "upload", "calc-local", cwd=local_run)
    assert resumed.code == 0, resumed.stderr
    resource = resumed.envelope()["resource"]
    assert resource["resumed"] == 2
    sent = [
        r.path.rsplit("/files/", 1)[1]
        for r in platform.state.requests[before:]
        if r.method == "PUT"
    ]
    assert sorted(sent) == sorted(set(session["files"]) - set(held))


def test_unknown_run_and_no_login(cli: Cli, platform: Platform, local_run: Path) -> None:
    missing = cli("--json", "eval", "upload", "nope", cwd=local_run)
    assert missing.error()["error"]["code"] == "NOT_FOUND"
    del cli.env["OSMOSIS_TOKEN"]
    logged_out = cli("--json", "eval", "upload", "calc-local", cwd=local_run)
    assert logged_out.error()["error"]["code"] == "AUTH_REQUIRED"
    assert _puts(platform) == []


def test_eval_run_upload_sends_the_finished_run(
    cli: Cli, platform: Platform, local_run: Path
) -> None:
    run = cli(
        "--json", "eval", "run", f"configs/eval/{TEMPLATE}.toml", "--model", "mock",
        "--rows", "0-1", "--name", "with-upload", "--upload", cwd=local_run,
    )  # fmt: skip
    assert run.code == 0, run.stderr
    assert platform.state.find_run("eval", "with-upload-imported") is not None
    del cli.env["OSMOSIS_TOKEN"]
    refused = cli(
        "--json", "eval", "run", f"configs/eval/{TEMPLATE}.toml", "--model", "mock",
        "--rows", "0-1", "--name", "never-ran", "--upload", cwd=local_run,
    )  # fmt: skip
    assert refused.error()["error"]["code"] == "AUTH_REQUIRED"
    assert not (local_run / ".osmosis" / "evals" / "never-ran").exists()  # checked before running
