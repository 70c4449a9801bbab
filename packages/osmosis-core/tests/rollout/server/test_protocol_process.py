"""``serve(app)`` with the protocol in a process of its own (``_impl/protocol_process.py``).

Each test runs a real ``python main.py`` in a session of its own (so a Ctrl-C can be sent to
its process group as a terminal would) and talks to it over HTTP on 127.0.0.1. The rollouts
must run in the process ``serve()`` was called in; the protocol process must drain on one
Ctrl-C, and either process dying must end the other with a clear message.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import sys
import textwrap
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from .rollout_server_harness import body, final_result

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

_SERVER = textwrap.dedent(
    """
    import asyncio, os, sys
    from contextlib import asynccontextmanager
    from osmosis_ai.rollout import (
        AgentWorkflow, AgentWorkflowConfig, AgentWorkflowOutput, LocalBackend,
    )
    from osmosis_ai.rollout.server import create_rollout_server, serve

    RUNS = []
    LIFESPAN = {}

    @asynccontextmanager
    async def lifespan(app):
        if os.environ.get("FAIL_LIFESPAN"):
            raise RuntimeError("the lifespan could not open its client")
        LIFESPAN["pid"] = os.getpid()
        yield
        print("LIFESPAN EXITED", flush=True)

    class Workflow(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx):
            RUNS.append(os.getpid())
            if ctx.prompt[-1]["content"] == "slow":  # wait for the test's word, loop free
                reader, writer = await asyncio.open_connection(
                    "127.0.0.1", int(os.environ["CONTROL_PORT"])
                )
                writer.write(b"started\\n")
                await reader.readline()
                writer.close()
            answer = {"role": "assistant", "content": f"{os.getpid()} {LIFESPAN.get('pid')}"}
            return AgentWorkflowOutput(messages=[*ctx.prompt, answer])

    app = create_rollout_server(
        backend=LocalBackend(workflow=Workflow, workflow_config=AgentWorkflowConfig(name="p")),
        lifespan=lifespan,
        result_wait_timeout_sec=2,
        drain_grace_sec=60,
    )
    if os.environ.get("EXTRA_ROUTE"):
        @app.get("/extra")
        async def extra():
            return {"runs": len(RUNS)}

    if __name__ == "__main__":
        try:
            serve(app, port=0, log_level="info")
        finally:
            print(f"AFTER SERVE: {len(RUNS)} rollout(s) ran in pid {os.getpid()}", flush=True)
    """
)


@dataclass
class _Server:
    proc: asyncio.subprocess.Process
    url: str = ""
    output: list[str] = field(default_factory=list)
    code: int | None = None
    line_arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def logged(self, text: str) -> None:
        """Return once ``text`` is in the server's output."""
        async with asyncio.timeout(60):
            while text not in self.text:
                self.line_arrived.clear()
                await self.line_arrived.wait()

    @property
    def text(self) -> str:
        return "".join(self.output)


async def _collect(stream: asyncio.StreamReader, server: _Server, listening: asyncio.Future[str]):
    while line := await stream.readline():
        text = line.decode()
        server.output.append(text)
        server.line_arrived.set()
        if "rollout server listening on " in text and not listening.done():
            listening.set_result(text.rsplit(" ", 1)[-1].strip())
    server.output.append("<exited>")
    server.line_arrived.set()
    if not listening.done():
        listening.set_exception(AssertionError(f"the server exited:\n{server.text}"))


@contextlib.asynccontextmanager
async def _started(tmp_path: Path, **env: str) -> AsyncIterator[_Server]:
    script = tmp_path / "main.py"
    script.write_text(_SERVER)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=str(tmp_path),
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    server = _Server(proc)
    listening: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    assert proc.stdout is not None
    reader = asyncio.create_task(_collect(proc.stdout, server, listening))
    try:
        async with asyncio.timeout(120):
            server.url = await asyncio.shield(listening)
        yield server
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        async with asyncio.timeout(120):
            server.code = await proc.wait()
            await reader


class _Control:
    """The test's end of the slow workflow's connection: it says "started", waits for a word."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.writers: list[asyncio.StreamWriter] = []

    async def accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        if await reader.readline() == b"started\n":
            self.started.set()

    def release(self) -> None:
        for writer in self.writers:
            if not writer.is_closing():
                writer.write(b"finish\n")


@contextlib.asynccontextmanager
async def _control() -> AsyncIterator[tuple[_Control, int]]:
    control = _Control()
    listener = await asyncio.start_server(control.accept, "127.0.0.1", 0)
    try:
        yield control, listener.sockets[0].getsockname()[1]
    finally:
        control.release()
        listener.close()


async def _exited(pid: int) -> None:
    """Return once ``pid`` (not our child) has exited: its pidfd becomes readable."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        gone = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().add_reader(fd, lambda: gone.done() or gone.set_result(None))
        try:
            async with asyncio.timeout(60):
                await gone
        finally:
            asyncio.get_running_loop().remove_reader(fd)
        assert select.select([fd], [], [], 0)[0]
    finally:
        os.close(fd)


def _message(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


async def test_rollouts_run_in_the_callers_process_and_one_ctrl_c_drains(
    tmp_path: Path, osmosis_home: Path
) -> None:
    async with _control() as (control, port), _started(tmp_path, CONTROL_PORT=str(port)) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            health = (await client.get("/health")).json()
            protocol_pid = health["protocol"]["pid"]
            slow = await client.post(
                "/rollout", json=body("slow", initial_messages=_message("slow"))
            )
            assert slow.status_code == 202, slow.text
            await control.started.wait()
            os.killpg(server.proc.pid, signal.SIGINT)  # Ctrl-C, as the terminal sends it
            await server.logged("rollout server is draining")
            # Draining, not stopped: new rollouts are refused, the one in flight goes on.
            refused = await client.post("/rollout", json=body("late"))
            control.release()
            result = await final_result(client, "slow", slow.json()["polling_lease_token"])
        try:
            await _exited(protocol_pid)
            async with asyncio.timeout(60):
                await server.proc.wait()
        except TimeoutError:
            raise AssertionError(
                f"the server did not stop after its drain:\n{server.text}"
            ) from None
    assert health["protocol"] == {
        "mode": "process",
        "pid": protocol_pid,
        "agent_pid": server.proc.pid,
    }
    assert protocol_pid != server.proc.pid
    assert refused.status_code == 503, refused.text
    assert result["status"] == "success", result
    # The workflow ran in the process serve() was called in, after its lifespan ran there.
    pid = server.proc.pid
    assert result["sample"]["messages"][-1]["content"] == f"{pid} {pid}"
    assert f"AFTER SERVE: 1 rollout(s) ran in pid {pid}" in server.text
    assert "LIFESPAN EXITED" in server.text
    assert server.code == -signal.SIGINT, server.text  # raised again after the drain


async def test_a_killed_protocol_process_ends_serve_with_a_clear_error(
    tmp_path: Path, osmosis_home: Path
) -> None:
    async with _started(tmp_path) as server, httpx.AsyncClient(base_url=server.url) as client:
        protocol_pid = (await client.get("/health")).json()["protocol"]["pid"]
        os.kill(protocol_pid, signal.SIGKILL)
        async with asyncio.timeout(60):
            await server.proc.wait()
    assert server.code == 1, server.text
    assert (
        f"ProtocolProcessDied: the rollout server's protocol process (pid {protocol_pid}) was "
        "killed by SIGKILL" in server.text
    )


async def test_a_killed_agent_process_takes_the_protocol_process_with_it(
    tmp_path: Path, osmosis_home: Path
) -> None:
    """``kill -9`` of the server's pid is a crash of the whole server, as with one process."""
    async with _control() as (control, port), _started(tmp_path, CONTROL_PORT=str(port)) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            protocol_pid = (await client.get("/health")).json()["protocol"]["pid"]
            slow = await client.post(
                "/rollout", json=body("slow", initial_messages=_message("slow"))
            )
            assert slow.status_code == 202, slow.text
            await control.started.wait()
            os.kill(server.proc.pid, signal.SIGKILL)
        await _exited(protocol_pid)  # nothing is left listening without agents
    assert server.code == -signal.SIGKILL
    async with httpx.AsyncClient(base_url=server.url) as client:
        with pytest.raises(httpx.ConnectError):  # the port is closed with it
            await client.get("/health")


async def test_custom_routes_keep_the_protocol_in_a_thread(
    tmp_path: Path, osmosis_home: Path
) -> None:
    async with (
        _started(tmp_path, EXTRA_ROUTE="1") as server,
        httpx.AsyncClient(base_url=server.url) as client,
    ):
        admitted = await client.post("/rollout", json=body("r1"))
        await final_result(client, "r1", admitted.json()["polling_lease_token"])
        extra = (await client.get("/extra")).json()
        health = (await client.get("/health")).json()
    assert "protocol" not in health
    assert extra == {"runs": 1}  # the route sees the rollouts' state: same process
    assert "the protocol runs in a thread of this process (routes or middleware" in server.text


async def test_a_failing_lifespan_is_raised_by_serve(tmp_path: Path, osmosis_home: Path) -> None:
    script = tmp_path / "main.py"
    script.write_text(_SERVER)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        env={**os.environ, "FAIL_LIFESPAN": "1"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=str(tmp_path),
    )
    async with asyncio.timeout(120):
        output, _ = await proc.communicate()
    text = output.decode()
    assert proc.returncode == 1, text
    assert "RuntimeError: the lifespan could not open its client" in text
    assert "AFTER SERVE: 0 rollout(s)" in text


def _plain_app() -> Any:
    from osmosis_ai.rollout.server import create_rollout_server

    from .rollout_server_harness import FakeBackend

    return create_rollout_server(backend=FakeBackend())


def test_when_serve_keeps_the_protocol_in_a_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    from osmosis_ai.errors import ConfigurationError
    from osmosis_ai.rollout.server._impl.protocol_process import ENV_PROTOCOL, unavailable
    from osmosis_ai.rollout.server._impl.workers import zygote

    app = _plain_app()
    monkeypatch.delenv(ENV_PROTOCOL, raising=False)
    # The fork-safety rules (threads, a running loop) are the zygote's, tested with it; pytest
    # runs threads of its own here, so they are taken as satisfied for the app-shape rules.
    monkeypatch.setattr(zygote, "fork_refused", lambda **_: None)
    assert unavailable(app) is None

    monkeypatch.setenv(ENV_PROTOCOL, "thread")
    assert unavailable(app) == f"{ENV_PROTOCOL}=thread"

    monkeypatch.setenv(ENV_PROTOCOL, "sometimes")
    with pytest.raises(ConfigurationError, match="thread to answer HTTP from a thread"):
        unavailable(app)

    monkeypatch.setenv(ENV_PROTOCOL, "auto")
    app.add_api_route("/extra", lambda: {}, methods=["GET"])
    assert "routes or middleware were added" in (unavailable(app) or "")
    monkeypatch.setenv(ENV_PROTOCOL, "process")  # forks anyway
    assert unavailable(app) is None

    class Wrapped:  # a caller's ASGI wrapper carrying the app's state
        state = _plain_app().state

    monkeypatch.setenv(ENV_PROTOCOL, "auto")
    assert "not the one create_rollout_server() returned" in (unavailable(Wrapped()) or "")
    monkeypatch.setattr(zygote, "fork_refused", lambda **_: "threads are already running (x)")
    assert unavailable(_plain_app()) == "threads are already running (x)"
