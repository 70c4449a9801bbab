"""``append_whole``: one write to an append-only file of whole lines, all of it or none of it
(and ``write_all``, the loop under it: ``os.write`` until every byte is written).

The one owner of that rule for osmosis's append-only files (the evaluation journal
``events.jsonl``, the rollout server's outbox); :mod:`osmosis_ai._util.group_sync` makes their
writes durable. A write can fail part-way (a full disk lands some bytes, then ``ENOSPC``): the
bytes that landed are cut off again (shrinking a file needs no space), so no later line is ever
appended to a torn one. The caller decides what a failure means (raise it, or keep the data and
retry) and keeps the file's size.
"""

from __future__ import annotations

import contextlib
import os


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until all of ``data`` is written (a write may take only part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def append_whole(fd: int, data: bytes, size: int) -> None:
    """Write all of ``data`` to ``fd`` (opened with ``O_APPEND``; ``size`` bytes long before
    this write). On an ``OSError`` the file is cut back to ``size`` and the error re-raised."""
    try:
        write_all(fd, data)
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        raise
