"""``eval download``: selection, atomic writes, checksums, and resuming after a kill."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from platform_harness import Cli, Platform  # pyright: ignore[reportMissingImports]
from stand_in_state import Artifact, Pause  # pyright: ignore[reportMissingImports]


def _eval_run(platform: Platform, name: str, trajectory_size: int = 1000) -> dict:
    run = platform.state.add_run("eval", name, status="succeeded")
    files = [Artifact("metrics", "metrics.json", json.dumps({"pass_rate": 0.5}).encode())]
    for row in range(3):
        content = (f"row {row} " * trajectory_size).encode()[:trajectory_size]
        files.append(Artifact("trajectories", f"trajectories/row_{row}_run_0.json", content, row))
    files.append(Artifact("logs", "logs.txt", b"log line\n"))
    platform.state.artifacts[run["id"]] = files
    return run


def test_download_writes_the_selected_files(cli: Cli, platform: Platform, tmp_path: Path) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    run = _eval_run(platform, "done")
    result = cli("--json", "eval", "download", "done", "--rows", "0,2", cwd=tmp_path)
    assert result.code == 0, result.stderr
    root = tmp_path / "done"
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) == [
        "metrics.json",
        "trajectories/row_0_run_0.json",
        "trajectories/row_2_run_0.json",
    ]
    for artifact in platform.state.artifacts[run["id"]][:2]:
        assert (root / artifact.path).read_bytes() == artifact.content
    resource = result.envelope()["resource"]
    assert {f["status"] for f in resource["files"]} == {"downloaded"}

    again = cli("--json", "eval", "download", "done", "--type", "all", cwd=tmp_path)
    statuses = {Path(f["path"]).name: f["status"] for f in again.envelope()["resource"]["files"]}
    assert statuses["metrics.json"] == "up_to_date"
    assert statuses["logs.txt"] == statuses["row_1_run_0.json"] == "downloaded"


def test_download_refuses_to_overwrite_a_different_file(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    _eval_run(platform, "done")
    out = tmp_path / "out"
    (out).mkdir()
    (out / "metrics.json").write_text("mine", encoding="utf-8")
    refused = cli("--json", "eval", "download", "done", "-o", str(out), cwd=tmp_path)
    assert refused.code == 1
    error = refused.error()["error"]
    assert (error["code"], error["details"]["flags"]) == ("CONFLICT", ["--overwrite"])
    assert not (out / "trajectories").exists()  # nothing fetched before the check
    forced = cli("--json", "eval", "download", "done", "-o", str(out), "--overwrite", cwd=tmp_path)
    assert forced.code == 0, forced.stderr
    assert json.loads((out / "metrics.json").read_text(encoding="utf-8")) == {"pass_rate": 0.5}
    bad = cli("--json", "eval", "download", "done", "--type", "metric", cwd=tmp_path)
    assert bad.error()["error"]["code"] == "VALIDATION"


def _wait_for_size(path: Path, size: int, timeout: float = 30) -> None:
    """Wait until ``path`` holds ``size`` bytes (the CLI writes as bytes arrive)."""
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.stat().st_size >= size):
        assert time.monotonic() < deadline, f"{path} never reached {size} bytes"
        time.sleep(0.01)


def test_a_killed_download_resumes_to_a_byte_identical_file(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    run = platform.state.add_run("eval", "large", status="succeeded")
    content = os.urandom(6 * 1024 * 1024 + 123)
    platform.state.artifacts[run["id"]] = [Artifact("metrics", "metrics.json", content)]
    # Not a multiple of any read size: the last piece before the pause is a small one, which
    # must reach the file too (a killed download keeps every byte it received).
    pause = Pause("metrics.json", after_bytes=2 * 1024 * 1024 + 100)
    platform.state.pauses.append(pause)
    dest = tmp_path / "large" / "metrics.json"
    part = dest.with_name("metrics.json.part")

    first = cli.popen("--json", "eval", "download", "large", cwd=tmp_path)
    try:
        assert pause.reached.wait(30), "the download never started"
        _wait_for_size(part, pause.after_bytes)
        first.kill()  # SIGKILL: no clean-up code runs
        first.wait(timeout=10)
    finally:
        if first.poll() is None:
            first.kill()
        pause.release.set()
    assert not dest.exists()  # the destination is never a torn file
    assert part.stat().st_size == pause.after_bytes

    platform.state.pauses.clear()
    second = cli("--json", "eval", "download", "large", cwd=tmp_path)
    assert second.code == 0, second.stderr
    assert second.envelope()["resource"]["files"][0]["status"] == "resumed"
    assert dest.read_bytes() == content
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == hashlib.sha256(content).hexdigest()
    assert not part.exists()
    assert not dest.with_name("metrics.json.part-meta").exists()
    ranged = [r.headers.get("range") for r in platform.state.requests if "artifacts/" in r.path]
    assert ranged == [None, f"bytes={pause.after_bytes}-"]


def test_a_changed_remote_file_restarts_instead_of_resuming(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    run = platform.state.add_run("eval", "changed", status="succeeded")
    platform.state.artifacts[run["id"]] = [Artifact("metrics", "metrics.json", b"new content")]
    dest = tmp_path / "changed" / "metrics.json"
    dest.parent.mkdir()
    dest.with_name("metrics.json.part").write_bytes(b"old con")
    dest.with_name("metrics.json.part-meta").write_text(
        json.dumps({"size": 11, "sha256": "0" * 64, "etag": '"old"'}), encoding="utf-8"
    )
    result = cli("--json", "eval", "download", "changed", cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert dest.read_bytes() == b"new content"
    assert [r.headers.get("range") for r in platform.state.requests if "artifacts/" in r.path] == [
        None
    ]


class _WrongChecksum(Artifact):
    def listing(self) -> dict:
        return {**super().listing(), "sha256": "0" * 64}


def test_a_corrupt_download_is_removed_not_kept(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    run = platform.state.add_run("eval", "corrupt", status="succeeded")
    platform.state.artifacts[run["id"]] = [_WrongChecksum("metrics", "metrics.json", b"{}")]
    result = cli("--json", "eval", "download", "corrupt", cwd=tmp_path)
    assert result.code == 1
    error = result.error()["error"]
    assert error["code"] == "PLATFORM_ERROR"
    assert "sha256 does not match" in error["message"]
    assert list((tmp_path / "corrupt").iterdir()) == []  # no destination, no partial file
