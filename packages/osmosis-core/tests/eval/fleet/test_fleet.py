"""``--servers``: the server list, the plan's checks, and the fleet's slot accounting.

The end-to-end behaviour (three server processes, one SIGKILLed) is in tests-integration/fleet.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from osmosis_ai.eval._impl.fleet.pool import Fleet, FleetExhausted, Member
from osmosis_ai.eval._impl.fleet.servers import remote_servers, resolve_servers, server_capacity
from osmosis_ai.eval._impl.plan.plan import EvalOptions, EvalPlanError, build_plan
from osmosis_ai.rollout.client import RolloutClient

MakeWorkspace = Callable[..., Path]


def test_servers_from_flags_and_file_in_order(tmp_path: Path) -> None:
    listed = tmp_path / "servers.txt"
    listed.write_text("# fleet\nhttp://10.0.0.3:8000/\n\n  https://b.example:443  # node 2\n")
    assert resolve_servers(["http://10.0.0.1:8000,http://10.0.0.2:8000"], listed) == [
        "http://10.0.0.1:8000",
        "http://10.0.0.2:8000",
        "http://10.0.0.3:8000",
        "https://b.example:443",
    ]
    assert resolve_servers(None, None) == []


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("ftp://h:1", "http:// or https://"),
        ("http://user:secret@h:8000", "OSMOSIS_ROLLOUT_API_KEY"),
        ("http://h:8000?key=secret", "OSMOSIS_ROLLOUT_API_KEY"),
        ("http://h:port", "not a valid URL"),
        ("http://h:1,http://h:1/", "listed twice"),
    ],
)
def test_bad_server_lists_say_what_to_fix(value: str, says: str) -> None:
    with pytest.raises(EvalPlanError, match=says) as caught:
        resolve_servers([value], None)
    assert "secret" not in str(caught.value)


def test_servers_file_problems(tmp_path: Path) -> None:
    with pytest.raises(EvalPlanError, match="cannot read the servers file"):
        resolve_servers(None, tmp_path / "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing yet\n")
    with pytest.raises(EvalPlanError, match="lists no server URL"):
        resolve_servers(None, empty)


def test_capacity_from_health() -> None:
    assert server_capacity({"concurrency": {"max_concurrent": 16}, "max_queue_depth": 99}) == 16
    assert server_capacity({"backend": "workers", "max_queue_depth": 64}) == 64
    assert server_capacity({"status": "ok"}) is None


def test_remote_servers_are_those_not_on_loopback() -> None:
    """The fleet uses the one loopback rule (is_loopback_host on the URL's host): a server on
    another machine cannot reach a proxy that listens on 127.0.0.1 only."""
    local = [
        "http://localhost:8000",
        "http://127.0.0.2:8000",
        "http://[::1]:8000",
        "http://user:pw@127.0.0.1:1/",  # the host, not the user-info, decides
    ]
    remote = [
        "http://0.0.0.0:8000",
        "http://localhost.:8000",
        "http://localhost.example.com:8000",
        "http://127.0.0.1.nip.io:8000",  # the old prefix check called this one local
        "https://10.0.0.5",
    ]
    assert remote_servers(local + remote) == remote


def test_plan_reads_the_key_and_checks_the_proxy(workspace: MakeWorkspace) -> None:
    config = workspace(n_rows=2)

    def plan(**kwargs: Any) -> Any:
        return build_plan(
            config,
            EvalOptions(name="f", servers=["http://10.0.0.1:8000"], **kwargs),
            environ={"OSMOSIS_ROLLOUT_API_KEY": "k-123"},
        )

    built = plan()
    assert built.servers == ["http://10.0.0.1:8000"]
    assert built.servers_api_key == "k-123"
    assert "k-123" not in repr(built)
    assert (built.proxy_host, built.proxy_url, built.proxy_port) == ("127.0.0.1", None, 0)
    remote = plan(proxy_host="0.0.0.0", proxy_url="http://10.0.0.9:9100")
    assert (remote.proxy_host, remote.proxy_port) == ("0.0.0.0", 9100)
    with pytest.raises(EvalPlanError, match="--proxy-url"):
        plan(proxy_host="0.0.0.0")
    with pytest.raises(EvalPlanError, match="--isolated"):
        plan(isolated=True)


def _fleet(*capacities: int) -> tuple[Fleet, list[tuple[str, str, dict[str, Any]]]]:
    events: list[tuple[str, str, dict[str, Any]]] = []
    members = []
    for i, capacity in enumerate(capacities):
        member = Member(url=f"http://10.0.0.{i}:8000", client=RolloutClient(url="http://x:1"))
        member.capacity, member.limit = capacity, float(capacity)
        members.append(member)
    return Fleet(members, on_event=lambda *e: events.append(e)), events


async def test_slots_follow_free_capacity_and_429_feedback() -> None:
    fleet, _ = _fleet(2, 4)
    small, big = fleet.members
    taken = [await fleet.acquire() for _ in range(6)]
    assert taken.count(small) == 2
    assert taken.count(big) == 4
    waiter = asyncio.create_task(fleet.acquire())  # all full: waits
    await asyncio.sleep(0)
    assert not waiter.done()
    big.on_busy()  # a 429 from the big one: it takes no more than it runs, minus one
    assert big.limit == 3.0
    assert big.busy_answers == 1
    fleet.release(big, finished=False)  # an attempt that went elsewhere: no slot regained
    await asyncio.sleep(0)
    assert not waiter.done()
    assert big.free == 0
    fleet.release(small, finished=True)
    assert await waiter is small
    fleet.release(big, finished=True)  # a finished rollout grows the limit back by one
    assert big.limit == 4.0
    big.others = 2  # /health: it runs two rollouts for another controller
    assert big.free == 4.0 - big.in_flight - 2


async def test_a_failed_member_gets_nothing_and_its_attempts_are_cancelled() -> None:
    fleet, events = _fleet(2, 2)
    first, second = fleet.members
    attempt = asyncio.create_task(asyncio.sleep(60))
    first.tasks.add(attempt)
    fleet.fail(first, "stopped answering")
    await asyncio.sleep(0)
    assert attempt.cancelled()
    assert events[0][2]["server"] == first.url
    assert events[0][2]["code"] == "SERVER_FAILED"
    assert {id(await fleet.acquire()) for _ in range(2)} == {id(second)}
    fleet.fail(second, "refused our key")
    with pytest.raises(FleetExhausted, match="refused our key"):
        await fleet.acquire()
    assert [s["status"] for s in fleet.summaries()] == ["failed", "failed"]
