"""``IndexRows``: ``EvalRun.rows`` read from ``index.jsonl`` on demand (issue 39: a run of any
length returns without holding its rows)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from osmosis_ai.eval._impl.run_dir.records import IndexRows, RowRecord, read_index, write_index


def _rows(count: int, reward: float = 1.0) -> list[RowRecord]:
    return [
        RowRecord(
            row_index=i,
            run_index=0,
            source_row_index=i,
            status="success" if i % 3 else "failed",
            reward=reward if i % 3 else None,
            prompt=f"prompt {i} ü",
        )
        for i in range(count)
    ]


def test_rows_read_back_in_order_by_index_slice_and_iteration(tmp_path: Path) -> None:
    path = tmp_path / "index.jsonl"
    rows = _rows(5)
    write_index(path, rows)
    index = IndexRows(path)
    assert len(index) == 5
    assert list(index) == rows == read_index(path)
    assert index == rows  # a sequence equals the list of the same rows
    assert rows == index
    assert index[-1] == rows[4]
    assert index[1:3] == rows[1:3]
    with pytest.raises(IndexError):
        index[5]
    assert "5 rows" in repr(index)


def test_the_rows_stay_those_of_the_session_that_made_them(tmp_path: Path) -> None:
    """A later session replaces index.jsonl (and an archive moves the folder): an EvalRun
    returned earlier still reads its own rows."""
    path = tmp_path / "index.jsonl"
    write_index(path, _rows(3))
    index = IndexRows(path)
    write_index(path, _rows(2, reward=0.5))
    os.rename(path, tmp_path / "archived.jsonl")
    assert list(index) == _rows(3)


def test_a_rerun_that_kept_the_file_reads_every_row_as_resumed(tmp_path: Path) -> None:
    path = tmp_path / "index.jsonl"
    write_index(path, _rows(2))
    assert [r.resumed for r in IndexRows(path, resumed=True)] == [True, True]
    assert list(IndexRows(path, resumed=True)) == [replace(r, resumed=True) for r in _rows(2)]
