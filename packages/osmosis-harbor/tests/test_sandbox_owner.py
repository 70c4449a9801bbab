"""Owner labels and the orphan sweeper, on real local sandboxes and a really killed process."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from osmosis_ai.rollout.backend.harbor._sandbox_owner import (
    OWNER_FILE,
    current_owner,
    is_alive,
    local_sandboxes,
    process_start,
    register_owner,
    registered_owner,
    sandbox_name,
    sweep_local,
    sweep_orphans,
    token_of,
)
from osmosis_ai.rollout.backend.harbor.local_environment import NamespaceSandbox

_CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from osmosis_ai.rollout.backend.harbor.local_environment import NamespaceSandbox

    async def main():
        box = NamespaceSandbox()
        await box.start(workdir="/app")
        _, out, _ = await box.run(["sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $!"])
        print(box.merged.parent, out.decode().strip(), flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
    """
)


def _orphan_of_a_killed_process() -> tuple[Path, dict[str, object], int]:
    """A sandbox whose creating process was SIGKILLed (no cleanup code ran)."""
    env = {**os.environ, "TMPDIR": tempfile.gettempdir()}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout is not None
        scratch, background = child.stdout.readline().split()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    label = json.loads((Path(scratch) / OWNER_FILE).read_text())
    return Path(scratch), label, int(background)


def _until(condition: Callable[[], bool], limit_sec: float = 30.0) -> None:
    deadline = time.monotonic() + limit_sec
    while not condition():
        assert time.monotonic() < deadline, "the sandbox's processes were not killed"
        time.sleep(0.01)


def test_a_killed_processs_sandbox_is_found_and_removed_with_its_processes() -> None:
    scratch, label, background = _orphan_of_a_killed_process()
    background_start = process_start(background)
    holder = int(label["holder_pid"])  # type: ignore[arg-type]
    assert not is_alive(int(label["pid"]), label["start"])  # type: ignore[arg-type]
    assert is_alive(holder, label["holder_start"])  # type: ignore[arg-type]
    assert local_sandboxes() == [scratch]  # left behind

    assert sweep_local() == [scratch]
    assert not scratch.exists()
    assert background_start is not None
    # SIGKILL is delivered asynchronously: wait (bounded) for the processes to be gone.
    _until(lambda: not is_alive(holder, label["holder_start"]))  # type: ignore[arg-type]
    _until(lambda: not is_alive(background, background_start))  # what ran inside it too
    assert local_sandboxes() == []


async def test_a_live_owners_sandbox_is_kept() -> None:
    box = NamespaceSandbox()
    await box.start(workdir="/app")
    try:
        scratch = box.merged.parent
        label = json.loads((scratch / OWNER_FILE).read_text())
        assert label["pid"] == os.getpid()
        assert label["token"] == current_owner().token
        assert await sweep_orphans("local") == {"local": []}
        assert scratch.exists()
    finally:
        await box.stop()
    assert local_sandboxes() == []


def test_skypilot_names_carry_the_registered_owner() -> None:
    name = sandbox_name("osmosis-" + "x" * 80 + "__env")
    assert len(name) <= 53
    assert name.startswith("osmo-")
    token = token_of(name)
    assert token == register_owner().token
    assert registered_owner(token) == current_owner()
    assert token_of("hb-someone-else") is None


async def test_run_feeds_input_on_stdin_and_writes_stay_in_the_sandbox() -> None:
    """``run(input=...)``: what Inspect's ``python()`` tool needs (its code comes on stdin)."""
    box = NamespaceSandbox()
    await box.start(workdir="/app")
    try:
        code, out, _ = await box.run(
            ["sh", "-c", "cat > note.txt && wc -c < note.txt"], input=b"hello sandbox"
        )
        assert (code, out.decode().strip()) == (0, "13")
        assert box.inside("note.txt").read_bytes() == b"hello sandbox"
        code, out, _ = await box.run(["cat"])  # no input: stdin is empty, never the caller's
        assert (code, out) == (0, b"")
    finally:
        await box.stop()
    assert not await asyncio.to_thread(Path("/app/note.txt").exists)  # the host is untouched
