"""Pure parts of downloads and uploads: type selection, resume bookkeeping, local validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Mode, Output
from osmosis_cli.platform.datasets import validate_dataset
from osmosis_cli.platform.downloads import RemoteFile, part_paths, resumable_bytes
from osmosis_cli.platform.run_download import folder_name, parse_types


def test_parse_types() -> None:
    assert parse_types("metrics, trajectories") == ["metrics", "trajectories"]
    assert parse_types("all") == ["metrics", "trajectories", "artifacts", "logs"]
    with pytest.raises(CLIError) as info:
        parse_types("metric")
    assert info.value.details["flags"] == ["--type"]


def test_resume_only_the_same_remote_version(tmp_path: Path) -> None:
    remote = RemoteFile("/a", tmp_path / "f.json", size=10, sha256="ab")
    part, meta = part_paths(remote.dest)
    part.write_bytes(b"12345")
    assert resumable_bytes(remote) == 0  # no record of which version the bytes belong to
    meta.write_text(json.dumps({"size": 10, "sha256": "ab"}), encoding="utf-8")
    assert resumable_bytes(remote) == 5
    changed = RemoteFile("/a", remote.dest, size=10, sha256="cd")
    assert resumable_bytes(changed) == 0


def test_validation_uses_the_eval_rules_for_every_format(tmp_path: Path) -> None:
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    quiet = Output(mode=Mode.JSON)
    rows = [{"user_prompt": f"{i}*2", "ground_truth": str(2 * i)} for i in range(2500)]
    pq.write_table(pyarrow.Table.from_pylist(rows), tmp_path / "d.parquet", row_group_size=1000)
    assert validate_dataset(tmp_path / "d.parquet", quiet) == 2500
    (tmp_path / "d.csv").write_text("metadata\n{}\n", encoding="utf-8")
    with pytest.raises(CLIError) as info:
        validate_dataset(tmp_path / "d.csv", quiet)
    assert info.value.code is CLIErrorCode.VALIDATION
    assert "row 0" in info.value.message
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(CLIError, match="no rows"):
        validate_dataset(tmp_path / "empty.jsonl", quiet)


def test_the_default_folder_is_one_safe_segment() -> None:
    assert folder_name("my-run", "run_1") == "my-run"
    assert folder_name("/etc/x", "run_1") == "_etc_x"
    assert folder_name("..", "run_1") == "run_1"
    # A platform that names the run and its id '..' (or '..\x'): never the parent folder.
    assert folder_name("..", "..") == "run"
    assert folder_name("...", "..") == "run"
    assert folder_name(" .. ", "../..") == "run"
