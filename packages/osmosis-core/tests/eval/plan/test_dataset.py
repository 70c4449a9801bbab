from __future__ import annotations

import builtins
import json
from pathlib import Path
from typing import Any

import pytest

from osmosis_ai.eval._impl.plan.dataset import (
    DatasetError,
    file_sha256,
    load_dataset,
    normalize_row,
)


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_jsonl_prompt_mode_builds_messages_and_label(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "d.jsonl",
        [
            {"system_prompt": "be brief", "user_prompt": "2*3?", "ground_truth": 6},
            {"user_prompt": "4*5?", "label": "20", "extra": "ignored"},
        ],
    )
    rows = load_dataset(path)
    assert rows[0].initial_messages == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "2*3?"},
    ]
    assert rows[0].label == "6"  # non-strings are stringified
    assert rows[1].label == "20"
    assert rows[1].source_index == 1
    assert rows[1].metadata is None


def test_metadata_mode_accepts_json_string_and_object(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "d.jsonl",
        [{"metadata": {"task": "a"}}, {"metadata": json.dumps({"task": "b"}), "user_prompt": ""}],
    )
    rows = load_dataset(path)
    assert [r.metadata for r in rows] == [{"task": "a"}, {"task": "b"}]
    assert rows[1].initial_messages == []  # empty string counts as absent


def test_csv_rows(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text('user_prompt,ground_truth\n"What is 2, times 3?",6\nhi,\n')
    rows = load_dataset(path)
    assert rows[0].initial_messages[0]["content"] == "What is 2, times 3?"
    assert rows[1].label is None


def test_parquet_rows(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"user_prompt": ["a", "b"], "ground_truth": ["1", "2"]}), path)
    assert [r.label for r in load_dataset(path)] == ["1", "2"]


def test_parquet_without_pyarrow_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_import = builtins.__import__

    def no_pyarrow(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("pyarrow"):
            raise ImportError("No module named 'pyarrow'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    path = tmp_path / "d.parquet"
    path.write_bytes(b"PAR1")
    with pytest.raises(DatasetError, match=r"pip install 'osmosis-core\[parquet\]'"):
        load_dataset(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json}\n", "not valid JSON"),
        ("[1, 2]\n", "must be a JSON object"),
        ('{"question": "x"}\n', "needs a 'user_prompt'"),
        ('{"metadata": "{}"}\n', "non-empty JSON object"),
        ('{"metadata": "{oops"}\n', "'metadata' is not valid JSON"),
    ],
)
def test_bad_rows_are_explained(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(content)
    with pytest.raises(DatasetError, match=message):
        load_dataset(path)


def test_unsupported_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not found"):
        load_dataset(tmp_path / "nope.jsonl")
    (tmp_path / "d.txt").write_text("x")
    with pytest.raises(DatasetError, match="unsupported dataset format"):
        load_dataset(tmp_path / "d.txt")
    (tmp_path / "e.jsonl").write_text("\n")
    with pytest.raises(DatasetError, match="no rows"):
        load_dataset(tmp_path / "e.jsonl")


def test_sha256_changes_with_content(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "d.jsonl", [{"user_prompt": "a"}])
    before = file_sha256(path)
    _jsonl(path, [{"user_prompt": "b"}])
    assert file_sha256(path) != before


def test_nan_from_tables_is_absent() -> None:
    row = normalize_row(0, {"user_prompt": "x", "ground_truth": float("nan")})
    assert row.label is None
