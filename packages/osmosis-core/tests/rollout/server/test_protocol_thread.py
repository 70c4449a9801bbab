"""The protocol never waits behind agent work (issue 39, the tail).

``serve(app)`` in one process answers HTTP from a thread with its own event loop; rollouts (and
the caller's lifespan) run on the main thread's loop. A workflow that holds that loop, with CPU
work or a blocking call, must not stop admissions, polls or health from answering. No timing is
asserted: each test proves an answer arrived *while* the workflow still held its loop (the
workflow is released only afterwards, by the test, or makes the calls itself from inside).
"""

from __future__ import annotations

import asyncio
import json
import textwrap
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from osmosis_ai.rollout.backend.base import ExecutionBackend
from osmosis_ai.rollout.context import RolloutProgress, rollout_context_for
from osmosis_ai.rollout.server import create_rollout_server
from osmosis_ai.rollout.types import (
    ExecutionOutcome,
    ExecutionRequest,
    ExecutionResult,
    RolloutSample,
    RolloutStatus,
)
from osmosis_ai.testing import serve_app

from .rollout_server_harness import LEASE, body, final_result, script_server

# A server script: the "hold" rollout spins pure-Python CPU work on the agent loop until the
# test writes to the control connection; every rollout reports where it ran.
_HOLDING_SERVER = textwrap.dedent(
    """
    import asyncio, os, socket, threading
    from contextlib import asynccontextmanager
    from osmosis_ai.rollout import (
        AgentWorkflow, AgentWorkflowConfig, AgentWorkflowOutput, LocalBackend,
    )
    from osmosis_ai.rollout.server import create_rollout_server, serve

    LIFESPAN = {}

    @asynccontextmanager
    async def lifespan(app):
        LIFESPAN["loop"] = asyncio.get_running_loop()
        yield

    def spin_until_released(port):
        control = socket.create_connection(("127.0.0.1", port))
        control.sendall(b"holding\\n")
        control.setblocking(False)
        while True:
            total = 0
            for i in range(20000):  # CPU work that holds the loop (and the GIL, mostly)
                total += i
            try:
                if control.recv(64):
                    break
            except BlockingIOError:
                pass
        control.close()

    class Workflow(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx):
            if ctx.prompt[-1]["content"] == "hold":
                spin_until_released(int(os.environ["CONTROL_PORT"]))
            where = {
                "main_thread": threading.current_thread() is threading.main_thread(),
                "lifespan_loop": asyncio.get_running_loop() is LIFESPAN.get("loop"),
            }
            answer = {"role": "assistant", "content": repr(sorted(where.items()))}
            return AgentWorkflowOutput(messages=[*ctx.prompt, answer])

    app = create_rollout_server(
        backend=LocalBackend(
            workflow=Workflow, workflow_config=AgentWorkflowConfig(name="hold")
        ),
        lifespan=lifespan,
        result_wait_timeout_sec=2,
        drain_grace_sec=1,
    )
    if __name__ == "__main__":
        serve(app, port=0, log_level="info")
    """
)


class _Control:
    """The test's end of the held workflow's control connection."""

    def __init__(self) -> None:
        self.holding = asyncio.Event()
        self.writer: asyncio.StreamWriter | None = None

    async def accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        if await reader.readline() == b"holding\n":
            self.holding.set()

    def release(self) -> None:
        if self.writer is not None and not self.writer.is_closing():
            self.writer.write(b"release\n")


def _message(prompt: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": prompt}]


@pytest.mark.parametrize("protocol", ["thread", "default"])
async def test_admission_polls_and_health_answer_while_a_workflow_holds_the_loop_with_cpu_work(
    tmp_path: Path, osmosis_home: Path, protocol: str
) -> None:
    """``serve(app)``'s default (a protocol process on Linux) and the protocol thread."""
    script = tmp_path / "main.py"
    script.write_text(_HOLDING_SERVER)
    env = {"OSMOSIS_ROLLOUT_PROTOCOL": "thread"} if protocol == "thread" else {}
    control = _Control()
    listener = await asyncio.start_server(control.accept, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        async with (
            script_server(script, tmp_path, CONTROL_PORT=str(port), **env) as server,
            # The timeout only ends a failing run (before this change the admission below
            # waited for the spinning workflow, which waits for the test: forever).
            httpx.AsyncClient(base_url=server.url, timeout=60) as client,
        ):
            held = await client.post(
                "/rollout", json=body("held", initial_messages=_message("hold"))
            )
            assert held.status_code == 202, held.text
            await control.holding.wait()  # the workflow spins on the agent loop from here on

            other = await client.post("/rollout", json=body("other"))
            health = await client.get("/health")
            held_token = held.json()["polling_lease_token"]
            poll = await client.get("/rollout/held/result", headers={LEASE: held_token})
            still_holding = control.writer is not None and not control.writer.is_closing()

            control.release()
            held_result = await final_result(client, "held", held_token)
            other_result = await final_result(client, "other", other.json()["polling_lease_token"])
    finally:
        control.release()  # never leave a spinning server behind a failed assertion
        listener.close()
    assert still_holding
    assert other.status_code == 202, other.text
    assert health.status_code == 200
    assert health.json()["lifecycle"]["active_rollouts"] == 2
    assert poll.status_code == 200
    split = health.json().get("protocol")
    if protocol == "thread":
        assert split is None
        assert poll.json()["status"] == "running"  # reported by the backend on the agent loop
    else:  # the HTTP came from a forked process; the rollouts ran in the one started
        assert split["mode"] == "process"
        assert split["agent_pid"] == server.proc.pid != split["pid"]
        # A status crosses at the end of the agent loop's turn, which the spin holds.
        assert poll.json()["status"] in ("queued", "running")
    for result in (held_result, other_result):
        assert result["status"] == "success", result
        where = result["sample"]["messages"][-1]["content"]
        # Rollouts run on the main thread, on the loop the caller's lifespan ran on.
        assert where == repr([("lifespan_loop", True), ("main_thread", True)])
    assert server.code in (0, -15)


class _SelfCallingBackend(ExecutionBackend):
    """A rollout that blocks its event loop with synchronous HTTP calls to its own server (an
    admission, a poll of that rollout, health) and returns what it got."""

    def __init__(self) -> None:
        self.url = ""
        self.loop_thread: list[bool] = []

    async def execute(
        self, request: ExecutionRequest, progress: RolloutProgress | None = None
    ) -> ExecutionOutcome:
        with rollout_context_for(request, progress) as ctx:
            await ctx.set_status(RolloutStatus.RUNNING)
            self.loop_thread.append(threading.current_thread() is threading.main_thread())
            seen: dict[str, Any] = {}
            if request.id == "caller":
                # Blocking calls on purpose: they hold this loop until the server answers.
                with httpx.Client(base_url=self.url, timeout=60) as http:
                    admitted = http.post("/rollout", json=body("callee"))  # noqa: ASYNC212
                    token = admitted.json()["polling_lease_token"]
                    poll = http.get("/rollout/callee/result", headers={LEASE: token})  # noqa: ASYNC212
                    health = http.get("/health")  # noqa: ASYNC212
                    seen = {
                        "admission": admitted.status_code,
                        "poll": [poll.status_code, poll.json()["status"]],
                        "health": health.status_code,
                    }
            answer = {"role": "assistant", "content": json.dumps(seen)}
            sample = RolloutSample(messages=[*request.prompt, answer], label=request.label)
            return ExecutionOutcome(
                workflow=ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample)
            )

    def health(self) -> dict[str, Any]:
        return {"status": "ok"}


async def test_a_workflow_blocking_its_loop_can_call_its_own_server() -> None:
    backend = _SelfCallingBackend()
    app = create_rollout_server(backend=backend, result_wait_timeout_sec=1, configure_logging=False)
    async with (
        serve_app(app, protocol_thread=True) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        backend.url = url
        caller = await client.post("/rollout", json=body("caller"))
        result = await final_result(client, "caller", caller.json()["polling_lease_token"])
    assert result["status"] == "success", result
    # Admitted and polled (still queued: its loop was held by the caller) while held.
    seen = json.loads(result["sample"]["messages"][-1]["content"])
    assert seen == {"admission": 202, "poll": [200, "queued"], "health": 200}
    assert backend.loop_thread == [True, True]  # both ran on this (the main) thread's loop


class _UnwindingBackend(ExecutionBackend):
    """Blocks until cancelled, then needs ``cleanup`` before it lets the cancellation out."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.cleanup = asyncio.Event()
        self.unwound = False

    async def execute(
        self, request: ExecutionRequest, progress: RolloutProgress | None = None
    ) -> ExecutionOutcome:
        with rollout_context_for(request, progress) as ctx:
            await ctx.set_status(RolloutStatus.RUNNING)
            self.started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled.set()
                await self.cleanup.wait()
                self.unwound = True
                raise
        raise AssertionError("unreachable")

    def health(self) -> dict[str, Any]:
        return {"status": "ok"}


async def test_cancelling_a_rollout_on_the_agent_loop_waits_for_it_to_unwind() -> None:
    backend = _UnwindingBackend()
    app = create_rollout_server(backend=backend, result_wait_timeout_sec=1, configure_logging=False)
    async with (
        serve_app(app, protocol_thread=True) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        admitted = await client.post("/rollout", json=body("r1"))
        token = admitted.json()["polling_lease_token"]
        await backend.started.wait()
        cancel = await client.post("/rollout/cancel", json={"ids": ["r1"]})
        await backend.cancelled.wait()
        # Cancelled, not unwound yet: the server does not report a result it does not have.
        unwinding = (await client.get("/rollout/r1/result", headers={LEASE: token})).json()
        backend.cleanup.set()
        result = await final_result(client, "r1", token)
        again = (await client.get("/rollout/r1/result", headers={LEASE: token})).json()
    assert cancel.json() == {"dispositions": {"r1": "cancelled_running"}}
    assert unwinding["status"] == "running"
    assert backend.unwound
    assert result["status"] == "cancelled"
    assert again == result  # one terminal result


async def test_the_lifespan_and_backend_shutdown_run_on_the_agent_loop() -> None:
    seen: list[str] = []
    here = asyncio.get_running_loop()

    class Backend(_SelfCallingBackend):
        async def shutdown(self) -> None:
            seen.append(f"shutdown on agent loop: {asyncio.get_running_loop() is here}")

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        seen.append(f"enter on agent loop: {asyncio.get_running_loop() is here}")
        yield
        seen.append(f"exit on agent loop: {asyncio.get_running_loop() is here}")

    app = create_rollout_server(backend=Backend(), lifespan=lifespan, configure_logging=False)
    async with serve_app(app, protocol_thread=True) as url, httpx.AsyncClient(base_url=url) as c:
        assert (await c.get("/health")).status_code == 200
    assert seen == [
        "enter on agent loop: True",
        "shutdown on agent loop: True",
        "exit on agent loop: True",
    ]


def test_worker_niceness_is_checked() -> None:
    with pytest.raises(ValueError, match="worker_nice must be from 0"):
        create_rollout_server(backend=_SelfCallingBackend(), worker_nice=20)
    with pytest.raises(ValueError, match="worker_nice must be an integer"):
        create_rollout_server(backend=_SelfCallingBackend(), worker_nice=True)
