from __future__ import annotations

import fcntl
import os
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from osmosis_ai.eval._impl.run_dir.layout import (
    RunLayoutError,
    RunLock,
    archive_run,
    generate_run_name,
    session_running,
    validate_run_name,
)
from osmosis_ai.eval._impl.run_dir.manifest import (
    ManifestMismatchError,
    changed_groups,
    check_manifest,
    read_manifest,
    source_digest,
    write_manifest,
)


@pytest.mark.parametrize("name", ["a", "run-1.b_c", "X" * 96])
def test_valid_run_names(name: str) -> None:
    assert validate_run_name(name) == name


@pytest.mark.parametrize("name", ["", ".hidden", "-x", "a/b", "x" * 97, ".locks", "a b"])
def test_invalid_run_names(name: str) -> None:
    with pytest.raises(RunLayoutError, match="invalid run name"):
        validate_run_name(name)


def test_generated_name() -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert generate_run_name("my eval", "abcdef0123", now) == "my-eval-20260102T030405Z-abcdef01"


def test_lock_is_exclusive_and_released(tmp_path: Path) -> None:
    first = RunLock(tmp_path, "r")
    first.acquire()
    with pytest.raises(RunLayoutError, match="already holds"):
        RunLock(tmp_path, "r").acquire()
    first.release()
    with RunLock(tmp_path, "r"):
        pass


def test_a_status_probe_is_not_a_holder(tmp_path: Path) -> None:
    lock = RunLock(tmp_path, "r")
    assert not session_running(tmp_path / "r", "r")  # no lock file yet
    with lock:
        assert session_running(tmp_path / "r", "r")
    assert not session_running(tmp_path / "r", "r")
    # `eval list` probing (a shared flock for an instant) while a session starts: it waits.
    probe = os.open(lock.path, os.O_RDONLY)
    fcntl.flock(probe, fcntl.LOCK_SH)
    timer = threading.Timer(0.1, os.close, (probe,))
    timer.start()
    try:
        with RunLock(tmp_path, "r"):
            assert session_running(tmp_path / "r", "r")
    finally:
        timer.join()


def test_archive_moves_the_run(tmp_path: Path) -> None:
    run = tmp_path / "r"
    run.mkdir()
    (run / "x").write_text("1")
    target = archive_run(run)
    assert target is not None
    assert target.name.startswith("r.archive-")
    assert (target / "x").exists()
    assert not run.exists()
    assert archive_run(run) is None


def test_source_digest_ignores_venv_caches_and_lock(tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text("x = 1")
    before = source_digest(tmp_path)
    for junk in (".venv/lib/a.py", "__pycache__/m.pyc", "pkg.egg-info/PKG-INFO", "uv.lock"):
        path = tmp_path / junk
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("noise")
    assert source_digest(tmp_path) == before
    (tmp_path / "main.py").write_text("x = 2")
    assert source_digest(tmp_path) != before


def test_manifest_roundtrip_and_mismatch_names_groups(tmp_path: Path) -> None:
    inputs = {"model": {"model": "m"}, "dataset": {"sha256": "a"}, "n": 1}
    path = tmp_path / "manifest.json"
    write_manifest(path, "r", inputs, {})
    manifest = read_manifest(path)
    assert manifest is not None
    assert manifest["inputs"] == inputs
    check_manifest(manifest, "r", dict(inputs))
    changed = {**inputs, "dataset": {"sha256": "b"}, "n": 2}
    with pytest.raises(ManifestMismatchError, match=r"changed: dataset, n.*--fresh") as info:
        check_manifest(manifest, "r", changed)
    assert info.value.changed == ["dataset", "n"]
    assert changed_groups({"a": 1}, {"b": 1}) == ["a", "b"]


def test_unreadable_manifest_suggests_fresh(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text("{")
    with pytest.raises(ValueError, match="--fresh"):
        read_manifest(path)
