"""``dataset validate | upload | list | info | preview | download | logs | delete`` against the
stand-in platform."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest
from platform_harness import Cli, Platform  # pyright: ignore[reportMissingImports]
from stand_in_state import Fault, Pause  # pyright: ignore[reportMissingImports]

ROW = {"user_prompt": "2*3", "ground_truth": "6", "system_prompt": "Answer with #### n."}


def write_jsonl(path: Path, size: int) -> Path:
    """A valid prompt-mode dataset of at least ``size`` bytes, written in blocks."""
    line = (json.dumps({**ROW, "pad": "x" * 200}) + "\n").encode()
    block = line * max(1, (1 << 20) // len(line))
    with path.open("wb") as fh:
        written = 0
        while written < size:
            fh.write(block)
            written += len(block)
    return path


def test_upload_in_parts_with_bounded_memory(cli: Cli, platform: Platform, tmp_path: Path) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    platform.state.part_size = 4 * 1024 * 1024
    data = write_jsonl(tmp_path / "big.jsonl", 200 * 1024 * 1024)  # the 200 MB case
    size = data.stat().st_size
    result, rss = cli.measured("--json", "dataset", "upload", str(data), cwd=tmp_path)
    assert result.code == 0, result.stderr
    print(f"dataset upload of {size / 2**20:.0f} MiB: peak RSS {rss:.0f} MiB")
    # Streaming: the CLI's peak stays near its ~27 MiB baseline whatever the file size.
    assert rss < 64, f"peak RSS {rss:.0f} MiB for a {size / 2**20:.0f} MiB file"
    envelope = result.envelope()
    assert envelope["operation"] == "dataset.upload"
    dataset = envelope["resource"]
    assert (dataset["name"], dataset["size_bytes"], dataset["status"]) == ("big", size, "uploaded")
    parts = [r for r in platform.state.requests if r.method == "PUT"]
    assert len(parts) == -(-size // platform.state.part_size)
    assert all(int(p.headers["content-length"]) <= platform.state.part_size for p in parts)
    stored = platform.state.storage / "dataset-big"  # type: ignore[operator]
    with stored.open("rb") as got, data.open("rb") as sent:
        assert (
            hashlib.file_digest(got, "sha256").digest()
            == hashlib.file_digest(sent, "sha256").digest()
        )


def test_an_invalid_file_is_refused_before_anything_is_sent(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(ROW) + "\n" + json.dumps({"prompt": "no user_prompt"}) + "\n")
    result = cli("--json", "dataset", "upload", str(bad), cwd=tmp_path)
    assert result.code == 1
    error = result.error()["error"]
    assert error["code"] == "VALIDATION"
    assert "row 1" in error["message"]
    assert "user_prompt" in error["message"]
    assert error["details"]["valid_rows_before_error"] == 1
    unknown = cli("--json", "dataset", "upload", str(tmp_path / "x.txt"), cwd=tmp_path)
    assert unknown.error()["error"]["code"] == "VALIDATION"
    assert platform.state.requests == []


def test_csv_upload_then_list_info_overwrite_and_delete(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    data = tmp_path / "calc.csv"
    data.write_text("user_prompt,ground_truth\n2*3,6\n4*5,20\n1*1,1\n2*2,4\n", encoding="utf-8")
    first = cli("--json", "dataset", "upload", str(data), "--name", "calc", cwd=tmp_path)
    assert first.code == 0, first.stderr
    assert first.envelope()["resource"]["row_count"] == 4
    taken = cli("--json", "dataset", "upload", str(data), "--name", "calc", cwd=tmp_path)
    assert taken.error()["error"]["code"] == "CONFLICT"
    ask = cli(
        "--json", "dataset", "upload", str(data), "--name", "calc", "--overwrite", cwd=tmp_path
    )
    assert ask.error()["error"]["code"] == "INTERACTIVE_REQUIRED"
    replaced = cli(
        "--json", "dataset", "upload", str(data), "--name", "calc", "--overwrite", "-y",
        cwd=tmp_path,
    )  # fmt: skip
    assert replaced.code == 0, replaced.stderr

    listed = cli("--json", "dataset", "list", cwd=tmp_path).envelope()
    assert [d["name"] for d in listed["items"]] == ["calc"]
    info = cli("--json", "dataset", "info", "calc", cwd=tmp_path).envelope()["data"]
    assert (info["format"], info["row_count"]) == ("csv", 4)
    deleted = cli("--json", "dataset", "delete", "calc", "-y", cwd=tmp_path)
    assert deleted.envelope()["operation"] == "dataset.delete"
    gone = cli("--json", "dataset", "info", "calc", cwd=tmp_path)
    assert gone.error()["error"]["code"] == "NOT_FOUND"


def _rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        ([ROW] * 3, "has 3 row(s); the platform needs at least 4"),
        ([{"metadata": {"a": 1}}] * 3 + [{"metadata": {"a": "one"}}], "string at $.a"),
        ([{"metadata": {"a": 1}}] * 3 + [{"metadata": {"a": {}}}], "empty object at $.a"),
        ([{"metadata": {"a": 1}}] * 3 + [{"metadata": {"a": 2**64}}], "outside 64 bits"),
        ([ROW] * 3 + [{"prompt": "no user_prompt"}], "row 3"),
    ],
)
def test_validate_applies_the_platforms_rules_locally(
    cli: Cli, platform: Platform, tmp_path: Path, rows: list[dict], problem: str
) -> None:
    bad = _rows(tmp_path / "bad.jsonl", rows)
    result = cli("--json", "dataset", "validate", str(bad), cwd=tmp_path)
    assert result.code == 1
    error = result.error()["error"]
    assert error["code"] == "VALIDATION"
    assert problem in error["message"]
    # upload refuses the same file the same way, before sending anything
    cli.env["OSMOSIS_TOKEN"] = platform.token
    upload = cli("--json", "dataset", "upload", str(bad), cwd=tmp_path)
    assert problem in upload.error()["error"]["message"]
    assert platform.state.requests == []


def test_validate_accepts_a_good_file_and_needs_no_login(cli: Cli, tmp_path: Path) -> None:
    good = _rows(tmp_path / "good.jsonl", [{"metadata": {"a": i, "b": [1.5, 2]}} for i in range(4)])
    result = cli("--json", "dataset", "validate", str(good), cwd=tmp_path)
    assert result.code == 0, result.stderr
    data = result.envelope()["data"]
    assert (data["valid"], data["row_count"], data["format"]) == (True, 4, "jsonl")
    wrong = cli("--json", "dataset", "validate", str(tmp_path / "rows.txt"), cwd=tmp_path)
    assert "takes .jsonl, .csv, .parquet files" in wrong.error()["error"]["message"]
    missing = cli("--json", "dataset", "validate", str(tmp_path / "none.jsonl"), cwd=tmp_path)
    assert missing.error()["error"]["code"] == "NOT_FOUND"


def test_preview_logs_and_download_of_an_uploaded_dataset(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    rows = [{**ROW, "user_prompt": f"{i}*2", "ground_truth": str(2 * i)} for i in range(6)]
    data = _rows(tmp_path / "calc.jsonl", rows)
    assert cli("--json", "dataset", "upload", str(data), cwd=tmp_path).code == 0

    preview = cli("--json", "dataset", "preview", "calc", "--rows", "2", cwd=tmp_path).envelope()
    assert preview["items"] == rows[:2]
    assert (preview["requested_rows"], preview["returned_rows"]) == (2, 2)
    plain = cli("--plain", "dataset", "preview", "calc", cwd=tmp_path)
    assert [json.loads(line) for line in plain.stdout.splitlines()] == rows[:5]
    table = cli("dataset", "preview", "calc", "--rows", "2", cwd=tmp_path).stdout
    for shown in ("ground_truth", "0*2", "1*2"):  # one column per key, a line per row
        assert shown in table

    logs = cli("--json", "dataset", "logs", "calc", "--limit", "1", cwd=tmp_path).envelope()
    assert logs["items"][0]["message"].startswith("received")
    assert (logs["has_more"], logs["next_cursor"]) == (True, "1")
    rest = cli("--json", "dataset", "logs", "calc", "--cursor", "1", cwd=tmp_path).envelope()
    assert [e["message"] for e in rest["items"]] == ["parsed; status uploaded"]

    out = tmp_path / "out"
    out.mkdir()
    got = cli("--json", "dataset", "download", "calc", "-o", str(out), cwd=tmp_path)
    assert got.code == 0, got.stderr
    assert (out / "calc.jsonl").read_bytes() == data.read_bytes()
    again = cli("--json", "dataset", "download", "calc", "-o", str(out), cwd=tmp_path)
    assert again.error()["error"]["code"] == "CONFLICT"
    assert "--overwrite" in again.error()["error"]["message"]
    forced = cli(
        "--json", "dataset", "download", "calc", "-o", str(out / "copy.jsonl"), cwd=tmp_path
    )
    assert forced.code == 0, forced.stderr
    assert (out / "copy.jsonl").read_bytes() == data.read_bytes()


def test_a_dataset_still_processing_has_no_preview_and_no_download(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    data = _rows(tmp_path / "slow.jsonl", [ROW] * 4)
    assert cli("--json", "dataset", "upload", str(data), cwd=tmp_path).code == 0
    platform.state.datasets["slow"]["status"] = "processing"
    platform.state.datasets["slow"]["data_preview"] = None
    preview = cli("--json", "dataset", "preview", "slow", cwd=tmp_path).envelope()["data"]
    assert preview["available"] is False
    assert "still processing" in preview["message"]
    refused = cli("--json", "dataset", "download", "slow", cwd=tmp_path)
    assert refused.code == 1
    assert refused.error()["error"]["code"] == "CONFLICT"
    assert "status: processing" in refused.error()["error"]["message"]
    assert not (tmp_path / "slow.jsonl.part").exists()


def test_an_interrupted_dataset_download_resumes(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    (tmp_path / "src").mkdir()
    data = write_jsonl(tmp_path / "src" / "big.jsonl", 3 * 1024 * 1024)
    assert cli("--json", "dataset", "upload", str(data), cwd=tmp_path).code == 0
    pause = Pause("datasets/big", after_bytes=1024 * 1024 + 7)
    platform.state.pauses.append(pause)
    dest = tmp_path / "big.jsonl"
    part = tmp_path / "big.jsonl.part"
    first = cli.popen("--json", "dataset", "download", "big", cwd=tmp_path)
    try:
        assert pause.reached.wait(30), "the download never started"
        deadline = time.monotonic() + 30
        while not (part.exists() and part.stat().st_size >= pause.after_bytes):
            assert time.monotonic() < deadline, "the first bytes never reached the part file"
            time.sleep(0.01)
        first.kill()  # SIGKILL: no clean-up code runs
        first.wait(timeout=10)
    finally:
        if first.poll() is None:
            first.kill()
        pause.release.set()
    assert not dest.exists()  # never a torn file
    platform.state.pauses.clear()
    second = cli("--json", "dataset", "download", "big", cwd=tmp_path)
    assert second.code == 0, second.stderr
    assert second.envelope()["resource"]["transfer"] == "resumed"
    assert dest.read_bytes() == data.read_bytes()
    ranged = [r.headers.get("range") for r in platform.state.requests if r.path.endswith("content")]
    assert ranged == [None, f"bytes={pause.after_bytes}-"]


@pytest.mark.parametrize(
    ("command", "status", "code"),
    [
        (("dataset", "preview", "calc"), 404, "NOT_FOUND"),
        (("dataset", "logs", "calc"), 403, "PERMISSION_DENIED"),
        (("dataset", "download", "calc"), 500, "PLATFORM_ERROR"),
        (("dataset", "preview", "calc"), 401, "AUTH_REQUIRED"),
    ],
)
def test_platform_errors_on_the_new_dataset_commands(
    cli: Cli, platform: Platform, tmp_path: Path, command: tuple[str, ...], status: int, code: str
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    platform.state.faults.append(Fault("GET", "/api/cli/datasets/calc", status, times=-1))
    result = cli("--json", *command, cwd=tmp_path)
    assert result.code == 1
    assert result.error()["error"]["code"] == code
