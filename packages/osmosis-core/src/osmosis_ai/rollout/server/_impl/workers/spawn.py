"""How the pool starts a worker process: forked by the zygote (:mod:`.zygote`), else by exec.

:class:`Launcher` is the pool's side of it. It holds the zygote the server forked before its
event loop started (if any) and gives each new worker a process handle, :class:`ForkedProcess`
or :class:`ExecProcess`, with the same three operations: ``poll()``, ``kill()`` and
``await wait()`` (the exit code: negative for a signal, ``None`` when unknown). A zygote that
dies or stops answering is reaped and dropped with a warning; workers then start by exec, and
those it had forked keep running (their channels go straight to the server). Their exit status
is then unknown (the zygote was their parent), so they are killed and waited for by pid.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
from itertools import count
from typing import Any

from osmosis_ai._util import framing

logger = logging.getLogger("osmosis_ai.rollout.server")

#: How long the zygote may take to answer a request to fork a worker (it forks at once).
SPAWN_TIMEOUT_SEC = 30.0


class ExecProcess:
    """A worker started as ``python -m osmosis_ai.rollout.server._impl.workers.main FD SPEC``."""

    start = "exec"

    def __init__(self, channel: socket.socket, spec: dict[str, Any]) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "osmosis_ai.rollout.server._impl.workers.main",
                str(channel.fileno()),
                json.dumps(spec),
            ],
            pass_fds=(channel.fileno(),),
            stdin=subprocess.DEVNULL,
        )
        self.pid = self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def kill(self) -> None:
        self.proc.kill()

    async def wait(self) -> int | None:
        return await asyncio.to_thread(self.proc.wait)


class ForkedProcess:
    """A worker the zygote forked; the zygote reports its exit and kills it on request."""

    start = "fork"

    def __init__(self, zygote: Zygote, pid: int) -> None:
        self.zygote = zygote
        self.pid = pid
        self.exit: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()

    def poll(self) -> int | None:
        return self.exit.result() if self.exit.done() else None

    def kill(self) -> None:
        if not self.exit.done():
            self.zygote.kill(self.pid)

    async def wait(self) -> int | None:
        if not self.exit.done() and self.zygote.alive:
            await asyncio.wait([self.exit, self.zygote.lost], return_when=asyncio.FIRST_COMPLETED)
        if self.exit.done():
            return self.exit.result()
        # Orphaned by a dead zygote: its new parent reaps it; wait until the pid is gone.
        for _ in range(200):
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                break
            await asyncio.sleep(0.05)
        return None


class ZygoteLost(Exception):
    """The zygote is gone (already logged); start the worker by exec."""


class Zygote:
    """The pool's end of the zygote's socket: fork requests out, pids and exit statuses in."""

    def __init__(self, pid: int, control: socket.socket) -> None:
        self.pid = pid
        self.control = control
        self.alive = True
        self.children: dict[int, ForkedProcess] = {}
        self._spawns: dict[int, asyncio.Future[int]] = {}
        self._early_exits: dict[int, int] = {}  # exited before the pool saw it spawned
        self._tokens = count(1)
        self._lines = framing.LineSplitter()
        self._lock: asyncio.Lock | None = None
        self._lost: asyncio.Future[None] | None = None
        self._reaper: asyncio.Task[Any] | None = None

    @property
    def lost(self) -> asyncio.Future[None]:
        if self._lost is None:
            self._lost = asyncio.get_running_loop().create_future()
            if not self.alive:
                self._lost.set_result(None)
        return self._lost

    def attach(self) -> None:
        """Start reading the zygote's messages (on the running loop)."""
        self._lock = asyncio.Lock()
        self.control.setblocking(False)
        asyncio.get_running_loop().add_reader(self.control.fileno(), self._readable)

    async def spawn(self, channel: socket.socket, spec: dict[str, Any]) -> ForkedProcess:
        """Fork a worker that gets ``channel`` (the zygote closes its copy once it has forked)."""
        if self._lock is None:
            self.attach()
        assert self._lock is not None
        async with self._lock:  # one fork request in flight: each message carries one fd
            if not self.alive:
                raise ZygoteLost
            token = next(self._tokens)
            reply: asyncio.Future[int] = asyncio.get_running_loop().create_future()
            self._spawns[token] = reply
            line = framing.encode({"op": "spawn", "token": token, "spec": spec})
            try:
                socket.send_fds(self.control, [line], [channel.fileno()])
                async with asyncio.timeout(SPAWN_TIMEOUT_SEC):
                    pid = await reply
            except (OSError, TimeoutError) as exc:
                self.drop(f"did not answer a request to fork a worker ({exc!r})")
                raise ZygoteLost from exc
            finally:
                self._spawns.pop(token, None)
        child = ForkedProcess(self, pid)
        if pid in self._early_exits:
            child.exit.set_result(self._early_exits.pop(pid))
        else:
            self.children[pid] = child
        return child

    def kill(self, pid: int, sig: int = signal.SIGKILL) -> None:
        if self.alive:
            line = framing.encode({"op": "kill", "pid": pid, "signal": int(sig)})
            try:
                self.control.send(line)
                return
            except OSError as exc:
                self.drop(f"could not be asked to kill a worker ({exc!r})")
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)  # an orphan of the dead zygote

    def _readable(self) -> None:
        try:
            data = self.control.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.drop("exited")
            return
        for message in self._lines.feed(data):
            if message["op"] == "spawned":
                reply = self._spawns.get(message["token"])
                if reply is not None and not reply.done():
                    reply.set_result(message["pid"])
            elif message["op"] == "exited":
                child = self.children.pop(message["pid"], None)
                if child is None:
                    self._early_exits[message["pid"]] = message["code"]
                elif not child.exit.done():
                    child.exit.set_result(message["code"])

    def drop(self, why: str) -> None:
        """Stop using the zygote (reap it); later workers start by exec."""
        if not self.alive:
            return
        self.alive = False
        logger.warning(
            "the rollout worker zygote (pid %d) %s; new rollout workers start by exec",
            self.pid,
            why,
        )
        self._close()
        for reply in self._spawns.values():
            if not reply.done():
                reply.set_exception(ConnectionError("the zygote is gone"))
        if self._lost is not None and not self._lost.done():
            self._lost.set_result(None)
        self._reaper = asyncio.get_running_loop().create_task(self._reap(kill=True))

    def _close(self) -> None:
        if self._lock is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self.control.fileno())
        self.control.close()

    async def _reap(self, kill: bool) -> None:
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            await asyncio.to_thread(os.waitpid, self.pid, 0)

    async def close(self) -> None:
        """Shut the zygote down (it exits when its socket closes) and reap it."""
        if self.alive:
            self.alive = False
            self._close()
            await self._reap(kill=False)
        elif self._reaper is not None:
            await self._reaper


class Launcher:
    """Starts workers: through the zygote while it lives, else by exec."""

    def __init__(self, zygote: Zygote | None = None) -> None:
        self.zygote = zygote

    async def start(
        self, channel: socket.socket, spec: dict[str, Any]
    ) -> ExecProcess | ForkedProcess:
        zygote = self.zygote
        if zygote is not None and zygote.alive:
            with contextlib.suppress(ZygoteLost):
                return await zygote.spawn(channel, spec)
        return ExecProcess(channel, spec)

    def describe(self) -> dict[str, Any]:
        zygote = self.zygote
        return {
            "zygote_pid": zygote.pid if zygote is not None else None,
            "zygote_alive": zygote is not None and zygote.alive,
        }

    async def close(self) -> None:
        if self.zygote is not None:
            await self.zygote.close()
