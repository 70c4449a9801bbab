from __future__ import annotations

import pytest

from osmosis_ai.eval._impl.plan.selection import SelectionError, parse_rows_spec, select_rows


def test_rows_spec_expands_in_written_order() -> None:
    assert parse_rows_spec("7,0-2, 4", 10) == [7, 0, 1, 2, 4]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("a-b", "not a row list"),
        ("5-2", "inverted"),
        ("0-10", "out of range"),
        ("1,1", "more than once"),
        ("", "not a row list"),
    ],
)
def test_rows_spec_errors(spec: str, message: str) -> None:
    with pytest.raises(SelectionError, match=message):
        parse_rows_spec(spec, 10)


def test_limit_and_all() -> None:
    assert select_rows(5, limit=3) == [0, 1, 2]
    assert select_rows(5, limit=50) == [0, 1, 2, 3, 4]
    assert select_rows(3, limit=0) == [0, 1, 2]
    assert select_rows(3) == [0, 1, 2]
    with pytest.raises(SelectionError, match="not both"):
        select_rows(3, rows="0", limit=1)
