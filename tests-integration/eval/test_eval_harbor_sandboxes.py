"""`osmosis eval run` on a Harbor project (local sandbox), killed mid-flight and run again:
the rerun's sweeper removes the dead run's sandboxes (their directories and processes)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from eval_support import Cli

from osmosis_ai.testing import ScriptedPolicyServer
from osmosis_ai.testing.responders import multiply_solver

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("harbor") is None
    or importlib.util.find_spec("strands") is None
    or shutil.which("unshare") is None,
    reason="needs harbor, strands and util-linux (the local sandbox)",
)
TEMPLATE = "multiply-harbor-strands"


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _labels(tmp: Path) -> list[dict[str, Any]]:
    """The owner labels of the local sandboxes under ``tmp`` (complete ones: holder known)."""
    labels = []
    for scratch in sorted(tmp.glob("osmosis-localns-*")):
        try:
            label = json.loads((scratch / "owner.json").read_text())
        except (OSError, ValueError):
            continue
        if label.get("holder_pid"):
            labels.append({**label, "dir": scratch})
    return labels


def _running(pid: int, start: int | None) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields[0] not in ("Z", "X") and (start is None or int(fields[19]) == start)


@pytest.fixture
def held_policy() -> Iterator[tuple[ScriptedPolicyServer, threading.Event]]:
    """Solves multiply, but holds every rollout's call until the event is set (rollouts stay
    in flight); the controller's "hi" probe is answered at once."""
    release = threading.Event()

    def policy(body: dict[str, Any]) -> Any:
        if any(m.get("content") == "hi" for m in body.get("messages") or []):
            return multiply_solver(body)

        async def reply() -> Any:
            import asyncio

            await asyncio.to_thread(release.wait)
            return multiply_solver(body)

        return reply()

    with ScriptedPolicyServer(policy, max_recorded=0) as server:
        try:
            yield server, release
        finally:
            release.set()


def test_killed_eval_run_leaves_no_orphaned_sandbox_after_a_rerun(
    cli: Cli, tmp_path: Path, held_policy: tuple[ScriptedPolicyServer, threading.Event]
) -> None:
    policy, release = held_policy
    ws = tmp_path / "ws"
    ws.mkdir()
    assert cli.run("init", str(ws), cwd=tmp_path).code == 0
    applied = cli.run("template", "apply", TEMPLATE, cwd=ws)
    assert applied.code == 0, applied.stderr
    config = ws / "configs" / "eval" / f"{TEMPLATE}.toml"
    sandbox_tmp = tmp_path / "sandbox-tmp"
    sandbox_tmp.mkdir()
    env = {"OSMOSIS_HARBOR_ENV": "local", "TMPDIR": str(sandbox_tmp)}
    args = ("eval", "run", str(config), "--limit", "2", "--name", "k",
            "--base-url", policy.url, "--model", "scripted", "--json")  # fmt: skip

    proc = cli.popen(*args, cwd=ws, env=env)
    try:
        # Mid-flight: an agent inside a sandbox is waiting on the policy.
        _wait_for(lambda: policy.in_flight >= 1 or proc.poll() is not None, "a policy call")
        assert proc.poll() is None, proc.communicate()[1]
        _wait_for(lambda: bool(_labels(sandbox_tmp)), "a labelled sandbox")
        # The whole run dies without cleanup: the rollout server (the sandboxes' owner), then
        # `eval run` itself, both with SIGKILL.
        for owner in {label["pid"] for label in _labels(sandbox_tmp)}:
            os.kill(owner, signal.SIGKILL)
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    orphans = _labels(sandbox_tmp)
    assert orphans, "the killed run left no sandbox behind: nothing to sweep"
    for label in orphans:
        owner = (label["pid"], label["start"])
        _wait_for(lambda owner=owner: not _running(*owner), "the killed owner to exit")
        assert _running(label["holder_pid"], label["holder_start"])  # still alive: orphaned

    release.set()
    rerun = cli.run(*args, cwd=ws, env=env, timeout=600)
    assert rerun.code == 0, rerun.stderr
    resource = rerun.json()["resource"]
    assert resource["succeeded"] == 2
    for label in orphans:
        assert not label["dir"].exists()
        assert not _running(label["holder_pid"], label["holder_start"])
    assert list(sandbox_tmp.glob("osmosis-localns-*")) == []  # the rerun's own were torn down too
