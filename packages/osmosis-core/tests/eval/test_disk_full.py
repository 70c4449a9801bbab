"""A full disk stops ``eval run`` with the file it could not write and a resumable run (#20 item 12).

The fault is injected in process: the journal's ``os.write`` (in
``osmosis_ai._util.append_only``, which it appends through) fails with ``ENOSPC`` (as writes to
a full file system do) once ``allow`` records are written; every other file is written
normally. The run is then resumed with the disk "freed".
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from osmosis_ai import atomic_file
from osmosis_ai._util import append_only
from osmosis_ai.errors import EvalError
from osmosis_ai.eval import EvalDiskFullError
from osmosis_ai.eval._impl.plan.plan import EvalOptions, RunTuning, build_plan
from osmosis_ai.eval._impl.proxy.calls import RetryPolicy
from osmosis_ai.eval._impl.run_dir.journal import count_unreadable, iter_records
from osmosis_ai.eval._impl.session import run_session

MakeWorkspace = Callable[..., Path]
FAST_RETRY = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02)


class _FullAfter:
    """Stands in for the ``os`` module: ``write`` fails with ENOSPC after ``allow`` writes
    (each journal commit is one or more whole lines), and the first failing write lands a
    few bytes first, as a write that runs out of space mid-way does."""

    def __init__(self, allow: int) -> None:
        self.allow = allow
        self.failures = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: Any) -> int:
        if self.allow > 0:
            self.allow -= 1
            return os.write(fd, data)
        if not self.failures:
            self.failures += 1
            return os.write(fd, bytes(data[:7]))  # a torn start of a line
        self.failures += 1
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _plan(config: Path, **kwargs: Any) -> Any:
    return build_plan(
        config, EvalOptions(name="full", **kwargs), tuning=RunTuning(retry_policy=FAST_RETRY)
    )


async def test_full_journal_names_the_file_and_the_run_resumes(
    workspace: MakeWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = workspace(n_rows=6)
    full = _FullAfter(allow=2)
    monkeypatch.setattr(append_only, "os", full)
    with pytest.raises(EvalDiskFullError) as caught:
        await run_session(_plan(config, n=2, max_in_flight=1))
    error = caught.value
    assert isinstance(error, EvalError)
    journal = error.run_dir / "events.jsonl"
    assert error.path == journal
    assert error.run_name == "full"
    message = str(error)
    assert str(journal) in message
    assert "no space left" in message
    assert "resumable" in message
    assert full.failures >= 2
    # what was counted is intact: the torn bytes were cut off, no line is corrupt
    kept = list(iter_records(journal))
    assert len(kept) == 2
    assert count_unreadable(journal) == 0
    assert journal.read_bytes().endswith(b"\n")

    monkeypatch.setattr(append_only, "os", os)  # space freed
    resumed = await run_session(_plan(config, n=2, max_in_flight=1))
    assert (resumed.status, resumed.succeeded, resumed.failed) == ("success", 12, 0)
    assert resumed.resumed == 2  # the two counted before the disk filled were not run again
    records = list(iter_records(journal))
    assert len(records) == 12
    assert len({(r["row_index"], r["run_index"]) for r in records}) == 12


async def test_full_disk_when_writing_the_manifest(
    workspace: MakeWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = workspace(n_rows=1)
    monkeypatch.setattr(atomic_file, "os", _FullAfter(allow=0))
    with pytest.raises(EvalDiskFullError) as caught:
        await run_session(_plan(config))
    assert caught.value.path.name == "manifest.json"
    assert str(caught.value.path) in str(caught.value)
    assert not list(caught.value.path.parent.glob(".manifest.json.*"))  # no temp file left
