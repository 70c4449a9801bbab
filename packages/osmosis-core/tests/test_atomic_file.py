"""``osmosis_ai.atomic_file.write_atomic``: the one atomic file write."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from osmosis_ai.atomic_file import AtomicWriter, write_atomic


def test_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    write_atomic(target, '{"new": "é"}')
    assert target.read_text(encoding="utf-8") == '{"new": "é"}'
    write_atomic(str(target), b"\x00bytes", durable=True)
    assert target.read_bytes() == b"\x00bytes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_mode_is_applied_even_over_a_stale_temporary(tmp_path: Path) -> None:
    target = tmp_path / "credentials.json"
    import threading

    stale = tmp_path / f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    stale.write_text("left by a crash")
    stale.chmod(0o666)
    write_atomic(target, "secret", mode=0o600)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert not stale.exists()


def test_a_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "keep.txt"
    target.write_text("old")
    with pytest.raises(TypeError):
        write_atomic(target, 123)  # type: ignore[arg-type]  # neither bytes nor str
    assert target.read_text() == "old"
    with pytest.raises(FileNotFoundError):
        write_atomic(tmp_path / "missing" / "x.txt", "data")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_a_file_written_in_pieces_appears_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "index.jsonl"
    target.write_text("old\n")
    with AtomicWriter(target, durable=True) as writer:
        assert writer.write("one\n") == 4
        writer.write(b"two\n")
        assert target.read_text() == "old\n"  # nothing visible until the block ends
    assert target.read_text() == "one\ntwo\n"
    writer = AtomicWriter(target)

    def fail_midway() -> None:
        with writer:
            writer.write("three\n")
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        fail_midway()
    writer.abort()  # a second abort is harmless
    aborted = AtomicWriter(target)
    aborted.write("four\n")
    aborted.abort()
    assert target.read_text() == "one\ntwo\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.jsonl"]
