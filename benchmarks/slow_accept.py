"""A policy endpoint whose accept queue is saturated: a TCP front with a tiny listen backlog and a
slow accept loop, forwarding every connection it does accept to the real (scripted) policy.

    python benchmarks/slow_accept.py http://127.0.0.1:PORT --backlog 1 --accept-delay-ms 20

prints its own base URL, then serves until killed. The listening socket's backlog is
``--backlog`` connections and the loop accepts one connection per ``--accept-delay-ms``: a burst
of new connections (hundreds of rollouts opening their first policy connection at once) fills
the queue, and the kernel drops SYNs (the client retransmits after 1 s, 3 s, 7 s...) and final
handshake ACKs past it, so connects take seconds and time out (openai's connect timeout is
5 s), as against a policy server whose accept loop cannot keep up. Accepted connections are
forwarded byte for byte (keep-alive intact). ``GET``-free: its statistics are printed to stderr
on SIGTERM (connections accepted). The kernel's own count of refused handshakes is
``TcpExtListenOverflows`` in ``/proc/net/netstat`` (the benchmark prints its change).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import socket
import sys
from urllib.parse import urlsplit


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def _forward(client: socket.socket, upstream: tuple[str, int]) -> None:
    try:
        down_reader, down_writer = await asyncio.open_connection(sock=client)
        up_reader, up_writer = await asyncio.open_connection(*upstream)
    except OSError:
        client.close()
        return
    await asyncio.gather(_pipe(down_reader, up_writer), _pipe(up_reader, down_writer))


async def main_async(args: argparse.Namespace) -> None:
    target = urlsplit(args.upstream)
    upstream = (target.hostname or "127.0.0.1", target.port or 80)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(args.backlog)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    print(f"http://127.0.0.1:{port}{target.path}", flush=True)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    tasks: set[asyncio.Task[None]] = set()
    accepted = 0

    began = loop.time()
    period, stall = args.stall_every_ms / 1000, args.stall_ms / 1000

    async def accept_slowly() -> None:
        nonlocal accepted
        while True:
            into = (loop.time() - began) % period if period > 0 else stall
            if into < stall:  # the accept loop stalls: the queue fills, SYNs are dropped
                await asyncio.sleep(stall - into)
            client, _ = await loop.sock_accept(listener)
            accepted += 1
            task = asyncio.create_task(_forward(client, upstream))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            if args.accept_delay_ms:
                await asyncio.sleep(args.accept_delay_ms / 1000)

    acceptor = asyncio.create_task(accept_slowly())
    await stop.wait()
    acceptor.cancel()
    print(f"slow_accept: {accepted} connections accepted", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("upstream", help="the real policy's base URL")
    parser.add_argument("--backlog", type=int, default=16, help="listen backlog (connections)")
    parser.add_argument(
        "--accept-delay-ms", type=float, default=0.0, help="pause after each accept (ms)"
    )
    parser.add_argument(
        "--stall-ms", type=float, default=6000.0, help="the accept loop stops this long..."
    )
    parser.add_argument(
        "--stall-every-ms", type=float, default=15000.0, help="...once per this period"
    )
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
