"""``osmosis_ai._util.append_only``: an append of whole lines leaves no torn line on failure."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from osmosis_ai._util import append_only
from osmosis_ai._util.append_only import append_whole, write_all


class _ShortThenFull:
    """Stands in for the ``os`` module: the first write lands only 3 bytes (a short write),
    the second 2 more, then the disk is full (``ENOSPC``)."""

    def __init__(self) -> None:
        self.writes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: Any) -> int:
        self.writes += 1
        if self.writes == 1:
            return os.write(fd, bytes(data[:3]))
        if self.writes == 2:
            return os.write(fd, bytes(data[:2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _open(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)


def test_short_writes_are_continued_until_all_is_written(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    fd = _open(path)
    try:
        write_all(fd, b'{"a": 1}\n')
        append_whole(fd, b'{"b": 2}\n', len(b'{"a": 1}\n'))
    finally:
        os.close(fd)
    assert path.read_bytes() == b'{"a": 1}\n{"b": 2}\n'


def test_a_failed_append_cuts_what_landed_and_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a": 1}\n')
    fd = _open(path)
    stand_in = _ShortThenFull()
    monkeypatch.setattr(append_only, "os", stand_in)
    try:
        with pytest.raises(OSError, match="No space left") as caught:
            append_whole(fd, b'{"b": 2}\n', path.stat().st_size)
        monkeypatch.setattr(append_only, "os", os)
        append_whole(fd, b'{"c": 3}\n', path.stat().st_size)  # the next line starts clean
    finally:
        os.close(fd)
    assert caught.value.errno == errno.ENOSPC
    assert stand_in.writes == 3  # 3 bytes, 2 bytes, then the full disk
    assert path.read_bytes() == b'{"a": 1}\n{"c": 3}\n'
