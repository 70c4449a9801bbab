"""``osmosis_ai.retry_after.parse_retry_after``: the one reading of ``Retry-After``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from osmosis_ai.retry_after import parse_retry_after


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("3", 3.0),
        (" 1.5 ", 1.5),
        ("0", 0.0),
        ("-4", 0.0),
        (None, None),
        ("", None),
        ("soon", None),
        ("nan", None),
        ("inf", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # a date in the past: retry now
    ],
)
def test_values(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value) == expected


def test_http_date_in_the_future() -> None:
    when = datetime.now(UTC) + timedelta(seconds=120)
    seconds = parse_retry_after(format_datetime(when, usegmt=True))
    assert seconds is not None
    assert 100.0 < seconds <= 120.0
