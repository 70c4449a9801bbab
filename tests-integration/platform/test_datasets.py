"""``dataset upload | list | info | delete`` against the stand-in platform."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from platform_harness import Cli, Platform  # pyright: ignore[reportMissingImports]

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
    assert (dataset["name"], dataset["size_bytes"], dataset["status"]) == ("big", size, "ready")
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
    data.write_text("user_prompt,ground_truth\n2*3,6\n4*5,20\n", encoding="utf-8")
    first = cli("--json", "dataset", "upload", str(data), "--name", "calc", cwd=tmp_path)
    assert first.code == 0, first.stderr
    assert first.envelope()["resource"]["row_count"] == 2
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
    assert (info["format"], info["row_count"]) == ("csv", 2)
    deleted = cli("--json", "dataset", "delete", "calc", "-y", cwd=tmp_path)
    assert deleted.envelope()["operation"] == "dataset.delete"
    gone = cli("--json", "dataset", "info", "calc", cwd=tmp_path)
    assert gone.error()["error"]["code"] == "NOT_FOUND"
