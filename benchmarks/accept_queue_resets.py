"""What fails after a request was sent, at the socket level, when the policy's accept queue is full.

``--clients`` plain httpx clients (the policy client's pool settings: 1,000 connections kept, 4 s
keep-alive expiry, 5 s connect timeout; no retry of anything but connects, which are counted)
send chat-completion requests for ``--seconds`` to the scripted policy behind
``benchmarks/slow_accept.py`` (backlog 16, the accept loop stopped 6 s of every 15 s). Each
failure after connecting is classified by what the network showed during that attempt (httpx's
trace hooks): the exception, the errno at the bottom of its chain, whether the connection was
opened for this request, whether the request was written. The kernel's counters
(``/proc/net/netstat`` and ``/proc/net/snmp``, machine-wide) are printed as changes: a reset
that the listener sent for a connection it had only as a SYN cookie shows as
``TcpExtSyncookiesFailed`` and, on the client, ``TcpEstabResets``. Prints figures only; never
asserts. Why it matters: ``osmosis_ai.rollout.policy`` retries exactly the resets before any
response byte (docs/operations.md).

    uv run python benchmarks/accept_queue_resets.py --clients 512 --seconds 40
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import errno
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from scripted_policy import start_scripted_policy

_HERE = Path(__file__).resolve().parent
COUNTERS = (
    "TcpExtListenOverflows",
    "TcpExtSyncookiesSent",
    "TcpExtSyncookiesRecv",
    "TcpExtSyncookiesFailed",
    "TcpEstabResets",
    "TcpOutRsts",
)


def kernel_counters() -> dict[str, int]:
    """``TcpExt*`` and ``Tcp*`` counters of ``/proc/net/netstat`` and ``/proc/net/snmp``."""
    found: dict[str, int] = {}
    for name in ("/proc/net/netstat", "/proc/net/snmp"):
        lines = Path(name).read_text().splitlines()
        for names, values in zip(lines[::2], lines[1::2], strict=False):
            prefix = names.split(":", 1)[0]
            for key, value in zip(names.split()[1:], values.split()[1:], strict=False):
                if value.lstrip("-").isdigit():
                    found[f"{prefix}{key}"] = int(value)
    return found


def _errno_of(exc: BaseException) -> str:
    current: BaseException | None = exc
    while current is not None:
        if isinstance(current, OSError) and current.errno:
            return errno.errorcode.get(current.errno, str(current.errno))
        current = current.__cause__ or current.__context__
    return "-"


async def drive(url: str, clients: int, seconds: float) -> collections.Counter[str]:
    limits = httpx.Limits(
        max_connections=1000, max_keepalive_connections=1000, keepalive_expiry=4.0
    )
    outcomes: collections.Counter[str] = collections.Counter()
    body = {"model": "m", "messages": [{"role": "user", "content": "2*3"}]}
    end = time.monotonic() + seconds
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(600, connect=5.0)) as http:

        async def client() -> None:
            while time.monotonic() < end:
                events: list[str] = []

                async def trace(name: str, info: dict[str, Any], seen: list[str] = events) -> None:
                    seen.append(name)

                try:
                    reply = await http.post(
                        f"{url}/chat/completions", json=body, extensions={"trace": trace}
                    )
                    outcomes[f"answered {reply.status_code}"] += 1
                except (httpx.ConnectError, httpx.ConnectTimeout):
                    outcomes["connect failed (retried)"] += 1
                except httpx.TransportError as exc:
                    fresh = "connection.connect_tcp.complete" in events
                    sent = "http11.send_request_body.complete" in events
                    outcomes[
                        f"{type(exc).__name__} {_errno_of(exc)}, "
                        f"{'new' if fresh else 'reused'} connection, "
                        f"request {'sent' if sent else 'not sent'}"
                    ] += 1
                await asyncio.sleep(0.05)

        await asyncio.gather(*(client() for _ in range(clients)))
    return outcomes


async def main_async(args: argparse.Namespace) -> None:
    policy, policy_url = start_scripted_policy("instant")
    front = subprocess.Popen(  # noqa: ASYNC220
        [sys.executable, str(_HERE / "slow_accept.py"), policy_url, "--backlog", "16"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert front.stdout is not None
    url = front.stdout.readline().strip()
    try:
        before = kernel_counters()
        outcomes = await drive(url, args.clients, args.seconds)
        after = kernel_counters()
    finally:
        front.terminate()
        front.wait()
        policy.terminate()
        policy.wait()
    for outcome, count in sorted(outcomes.items()):
        print(f"{count:>8}  {outcome}")
    print("kernel counters (machine-wide changes):")
    for name in COUNTERS:
        print(f"{after.get(name, 0) - before.get(name, 0):>8}  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clients", type=int, default=512)
    parser.add_argument("--seconds", type=float, default=40.0)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
