"""`osmosis eval run --servers`: one evaluation over three rollout-server processes.

Every work item must be counted exactly once (one journal record per row, none missing), also
when one server is SIGKILLed mid-run; the summary names the server that failed.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from eval_support import Cli, read_jsonl, write_tiny_workspace
from fleet_support import MisbehavingServer, ServerFleet

ROWS = 300
KEY = "fleet-test-inbound-key-0123456789"
SERVER_ENV = {
    "TINY_MODE": "slow",
    "TINY_SLEEP": "0.05",
    "TINY_CONCURRENCY": "8",
    "OSMOSIS_ROLLOUT_API_KEY": KEY,
}


def _keys(events: Path) -> Counter[tuple[int, int]]:
    return Counter((r["row_index"], r["run_index"]) for r in read_jsonl(events))


def test_300_rows_over_three_servers_each_counted_once(
    cli: Cli, fleet: ServerFleet, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    config = write_tiny_workspace(ws, n_rows=ROWS, mode="one-call")
    urls = fleet.start(ws, 3, {**SERVER_ENV, "TINY_MODE": "one-call", "TINY_CONCURRENCY": "16"})
    servers_file = tmp_path / "servers.txt"
    servers_file.write_text("# written by hand\n" + "\n".join(urls[1:]) + "\n")

    result = cli.run(
        *("eval", "run", str(config), "--name", "f", "--json"),
        *("--servers", urls[0], "--servers-file", str(servers_file)),
        cwd=ws,
        env={"OSMOSIS_ROLLOUT_API_KEY": KEY},
    )

    assert result.code == 0, result.stderr
    resource = result.json()["resource"]
    assert resource["succeeded"] == ROWS
    assert resource["pending"] == 0
    keys = _keys(ws / ".osmosis" / "evals" / "f" / "events.jsonl")
    assert len(keys) == ROWS
    assert set(keys.values()) == {1}
    servers = {s["url"]: s for s in resource["servers"]}
    assert set(servers) == set(urls)
    assert all(s["status"] == "ok" and s["failure"] is None for s in servers.values())
    # every server took work, and the counts add up to the rows
    assert all(s["completed"] > 0 for s in servers.values())
    assert sum(s["completed"] for s in servers.values()) == ROWS
    assert KEY not in result.stdout + result.stderr


def test_sigkill_one_server_mid_run_loses_and_duplicates_nothing(
    cli: Cli, fleet: ServerFleet, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    config = write_tiny_workspace(ws, n_rows=ROWS, mode="slow")
    urls = fleet.start(ws, 3, {**SERVER_ENV, "TINY_SLEEP": "0.1"})
    events = ws / ".osmosis" / "evals" / "k" / "events.jsonl"
    victim = urls[1]

    def kill_after_some_results() -> None:
        deadline = time.monotonic() + 60
        while len(read_jsonl(events)) < 40 and time.monotonic() < deadline:
            time.sleep(0.02)
        fleet.kill(victim)

    killer = threading.Thread(target=kill_after_some_results)
    killer.start()
    result = cli.run(
        *("eval", "run", str(config), "--name", "k", "--json"),
        *("--servers", ",".join(urls)),
        cwd=ws,
        env={"OSMOSIS_ROLLOUT_API_KEY": KEY},
    )
    killer.join()

    assert result.code == 0, result.stderr
    resource = result.json()["resource"]
    assert resource["succeeded"] == ROWS
    assert resource["pending"] == 0
    keys = _keys(events)
    assert len(keys) == ROWS
    assert set(keys.values()) == {1}
    failed = [s for s in resource["servers"] if s["status"] == "failed"]
    assert [s["url"] for s in failed] == [victim]
    assert failed[0]["redispatched"] > 0  # it had rows in flight; they went elsewhere
    assert victim in result.stderr  # the SERVER_FAILED warning names it
    assert resource["halt_reason"] is None


def test_a_server_that_stops_answering_is_failed_and_its_rows_move(
    cli: Cli, fleet: ServerFleet, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    config = write_tiny_workspace(ws, n_rows=60, mode="slow")
    urls = fleet.start(ws, 2, {**SERVER_ENV, "TINY_SLEEP": "0.1"})
    events = ws / ".osmosis" / "evals" / "h" / "events.jsonl"
    frozen = urls[0]

    def freeze_after_some_results() -> None:
        deadline = time.monotonic() + 60
        while len(read_jsonl(events)) < 10 and time.monotonic() < deadline:
            time.sleep(0.02)
        fleet.freeze(frozen)  # alive, connected, silent: only the /health watch can tell

    freezer = threading.Thread(target=freeze_after_some_results)
    freezer.start()
    result = cli.run(
        *("eval", "run", str(config), "--name", "h", "--json", "--servers", ",".join(urls)),
        cwd=ws,
        env={"OSMOSIS_ROLLOUT_API_KEY": KEY},
    )
    freezer.join()

    assert result.code == 0, result.stderr
    resource = result.json()["resource"]
    assert resource["succeeded"] == 60
    keys = _keys(events)
    assert len(keys) == 60
    assert set(keys.values()) == {1}
    (failed,) = [s for s in resource["servers"] if s["status"] == "failed"]
    assert failed["url"] == frozen
    assert "stopped answering" in failed["failure"]


def test_plain_summary_names_the_failed_server(
    cli: Cli, fleet: ServerFleet, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    config = write_tiny_workspace(ws, n_rows=20, mode="noop")
    urls = fleet.start(ws, 2, {**SERVER_ENV, "TINY_MODE": "noop"})
    fleet.kill(urls[0])  # dead before the run: left out at start, the run still completes

    result = cli.run(
        *("eval", "run", str(config), "--name", "p", "--plain"),
        *("--servers", ",".join(urls)),
        cwd=ws,
        env={"OSMOSIS_ROLLOUT_API_KEY": KEY},
    )

    assert result.code == 0, result.stderr
    assert f"server failed: {urls[0]}" in result.stdout + result.stderr
    assert "not reachable at start" in result.stdout + result.stderr


def test_wrong_inbound_key_fails_every_server_and_says_which_variable(
    cli: Cli, fleet: ServerFleet, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    config = write_tiny_workspace(ws, n_rows=4, mode="noop")
    urls = fleet.start(ws, 1, {**SERVER_ENV, "TINY_MODE": "noop"})

    result = cli.run(
        *("eval", "run", str(config), "--name", "w", "--json", "--servers", urls[0]),
        cwd=ws,
        env={"OSMOSIS_ROLLOUT_API_KEY": "not-the-key"},
    )

    assert result.code == 1
    assert "OSMOSIS_ROLLOUT_API_KEY" in result.stderr
    assert KEY not in result.stderr
    assert "not-the-key" not in result.stderr


def _proxy_pid(logs: Path) -> int | None:
    """The policy proxy process's pid, from the run's ``logs.txt``."""
    if not logs.exists():
        return None
    for line in logs.read_text().splitlines():
        if "policy proxy listening" in line:
            return int(json.loads(line.split("policy proxy listening ", 1)[1])["pid"])
    return None


def test_a_dead_policy_proxy_halts_the_run_and_a_rerun_finishes_it(
    cli: Cli, fleet: ServerFleet, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    config = write_tiny_workspace(ws, n_rows=120, mode="slow")
    urls = fleet.start(ws, 2, {**SERVER_ENV, "TINY_SLEEP": "0.1"})
    run_dir = ws / ".osmosis" / "evals" / "x"
    events = run_dir / "events.jsonl"

    def kill_proxy_after_some_results() -> None:
        deadline = time.monotonic() + 60
        while len(read_jsonl(events)) < 20 and time.monotonic() < deadline:
            time.sleep(0.02)
        pid = _proxy_pid(run_dir / "logs.txt")
        assert pid is not None
        os.kill(pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_proxy_after_some_results)
    killer.start()
    args = ("eval", "run", str(config), "--name", "x", "--json", "--servers", ",".join(urls))
    result = cli.run(*args, cwd=ws, env={"OSMOSIS_ROLLOUT_API_KEY": KEY})
    killer.join()

    resource = result.json()["resource"]
    assert "never retrieved" not in result.stderr, result.stderr
    assert "policy proxy process exited" in resource["halt_reason"]
    assert "--name" in resource["halt_reason"]
    assert resource["pending"] > 0
    # No row was failed because its model calls met the dead proxy: those stay pending.
    assert resource["failed"] == 0
    assert resource["succeeded"] + resource["pending"] == 120

    again = cli.run(*args, cwd=ws, env={"OSMOSIS_ROLLOUT_API_KEY": KEY})

    assert again.code == 0, again.stderr
    assert again.json()["resource"]["succeeded"] == 120
    keys = _keys(events)
    assert len(keys) == 120
    assert set(keys.values()) == {1}


def test_a_server_answering_polls_with_garbage_is_failed_and_its_rows_move(
    cli: Cli, fleet: ServerFleet, tmp_path: Path
) -> None:
    """A server that admits rollouts and then answers their polls with something that is not a
    result is failed like a dead one (its rows go to the others), instead of halting the whole
    run with "the rollout server answered unexpectedly"."""
    ws = tmp_path / "ws"
    config = write_tiny_workspace(ws, n_rows=40, mode="one-call")
    [good] = fleet.start(ws, 1, {**SERVER_ENV, "TINY_MODE": "one-call"})
    with MisbehavingServer(b"this is not a rollout result") as bad:
        result = cli.run(
            *("eval", "run", str(config), "--name", "g", "--json"),
            *("--servers", f"{bad.url},{good}"),
            cwd=ws,
            env={"OSMOSIS_ROLLOUT_API_KEY": KEY},
        )
    assert result.code == 0, result.stderr
    resource = result.json()["resource"]
    assert resource["halt_reason"] is None
    assert resource["succeeded"] == 40
    assert resource["pending"] == 0
    keys = _keys(ws / ".osmosis" / "evals" / "g" / "events.jsonl")
    assert len(keys) == 40
    assert set(keys.values()) == {1}
    servers = {s["url"]: s for s in resource["servers"]}
    assert servers[bad.url]["status"] == "failed"
    assert "invalid body" in servers[bad.url]["failure"]
    assert bad.admitted  # it did take rows, and they were run again elsewhere
    assert servers[good]["status"] == "ok"


async def test_a_server_that_admits_and_never_finishes_is_failed_at_the_first_deadline(
    fleet: ServerFleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that admits rollouts and never finishes one holds each row it gets until the
    row's per-item deadline; it used to get new rows each time its slots freed (the run took
    a deadline per row it was given). Now the first row that passes its deadline there fails
    the server: that row is a terminal timeout, no later row goes to it, and every row is
    counted once."""
    from osmosis_ai.eval._impl.plan.plan import EvalOptions, RunTuning, build_plan
    from osmosis_ai.eval._impl.session import run_session

    monkeypatch.setenv("OSMOSIS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OSMOSIS_ROLLOUT_API_KEY", KEY)
    ws = tmp_path / "ws"
    config = write_tiny_workspace(ws, n_rows=16, mode="slow")
    # The good server needs longer than one deadline for its share (14 rows, 2 at a time, 1 s
    # each), so the stuck one's slots free up while rows are still waiting.
    [good] = fleet.start(ws, 1, {**SERVER_ENV, "TINY_SLEEP": "1.0", "TINY_CONCURRENCY": "2"})
    with MisbehavingServer(None, capacity=2) as stuck:
        plan = build_plan(
            config,
            EvalOptions(name="s", servers=[stuck.url, good]),
            tuning=RunTuning(item_deadline_sec=4.0),
        )
        result = await run_session(plan)
    keys = _keys(ws / ".osmosis" / "evals" / "s" / "events.jsonl")
    assert len(keys) == 16
    assert set(keys.values()) == {1}
    assert result.succeeded + result.failed == 16
    assert {r.error_type for r in result.failed_rows} <= {"timeout"}
    assert len(stuck.admitted) == 2  # its first two rows; nothing after the first deadline
    servers = {s["url"]: s for s in result.servers}
    assert servers[stuck.url]["status"] == "failed"
    assert "per-item deadline" in servers[stuck.url]["failure"]
    assert servers[good]["status"] == "ok"
