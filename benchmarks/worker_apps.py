"""The server side of ``benchmarks/workers.py``: the apps it measures, served.

Run by the benchmark as ``BENCH_APP=<app> BENCH_PORT=<port> BENCH_WORKERS=<n> python
benchmarks/worker_apps.py``: builds a module-level ``app`` (so worker processes rebuild it by
importing this file, as they would a user's ``main.py``) and serves it, in process
(``BENCH_WORKERS=0``) or with a pool of N workers. ``BENCH_PROFILE=<path>`` writes a cProfile
of the server process to ``<path>.<app>.<n>``; ``BENCH_GC_THRESHOLD=a,b,c`` calls
``gc.set_threshold(a, b, c)`` in the server process (to try collector settings). ``/bench/stalls`` reports the server loop's
lateness and GC pauses (:class:`StallMonitor`); ``POST`` there starts a new measurement.
``/bench/heap`` counts the objects the collector tracks (:func:`heap_census`); ``/bench/pool``
reports how long the worker pool took to start and to restart each worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# Run as a script, this folder is sys.path[0]; benchmarks/strands.py would shadow `strands`.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != _HERE]
PROMPT = [{"role": "user", "content": "What is 6 times 7?"}]
LABEL = "42"
# The policy calls' timeout, connecting included. openai's default gives a connect 5 s; with 512
# Strands or OpenAI Agents rollouts at once on one worker of a loaded 2-core machine, that
# worker's event loop runs seconds late (each turn steps hundreds of agents), a new connection
# to the policy is noticed too late, and rollouts failed with `timeout` (ConnectTimeout)
# although the instant policy had accepted it at once: an overloaded worker, not what these
# runs measure (admission). A real deployment caps per-worker concurrency instead.
# ``BENCH_POLICY_TIMEOUT=default`` keeps the clients' own defaults (openai: a 5 s connect
# timeout), as against a policy whose accept queue is saturated (``workers.py
# --saturate-policy``): connects that time out must be retried, not fail the rollout.
POLICY_TIMEOUT_SEC: float | None = (
    None
    if os.environ.get("BENCH_POLICY_TIMEOUT") == "default"
    else float(os.environ.get("BENCH_POLICY_TIMEOUT") or 600.0)
)


def _timeout() -> dict[str, float]:
    return {} if POLICY_TIMEOUT_SEC is None else {"timeout": POLICY_TIMEOUT_SEC}


# -- the apps (built in the server process and again in each worker) ---------------------------


def _busy(seconds: float) -> int:
    """``seconds`` of this thread's CPU time (not wall time: the same work on a busy machine)."""
    end = time.thread_time() + seconds
    total = 0
    while time.thread_time() < end:
        total += sum(range(100))
    return total


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content or [] if isinstance(block, dict))


def _strands_backend(grader: type) -> Any:
    from strands import tool
    from strands.models.model import Model

    from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowConfig, LocalBackend
    from osmosis_ai.rollout.integrations.agents.strands import (
        OsmosisRolloutModel,
        OsmosisStrandsAgent,
    )

    @tool
    def multiply(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    class MultiplyConfig(AgentWorkflowConfig):
        name: str = "multiply"
        model: Model
        tools: Any

    config = MultiplyConfig(
        model=OsmosisRolloutModel(params={"temperature": 1.0, "max_tokens": 1024}, **_timeout()),
        tools=[multiply],
    )

    class MultiplyWorkflow(AgentWorkflow[MultiplyConfig]):
        async def run(self, ctx: Any) -> None:
            agent = OsmosisStrandsAgent(
                name="multiply",
                model=ctx.config.model,
                tools=ctx.config.tools,
                messages=ctx.prompt,
                callback_handler=None,
            )
            for _ in range(8):
                result = await agent.invoke_async()
                if not any("toolUse" in b for b in result.message.get("content") or []):
                    break

    return LocalBackend(workflow=MultiplyWorkflow, workflow_config=config, grader=grader)


def _openai_agents_backend(grader: type) -> Any:
    from agents import ModelSettings, Runner, function_tool

    from osmosis_ai.rollout import AgentWorkflow, LocalBackend
    from osmosis_ai.rollout.integrations.agents.openai_agents import (
        OsmosisAgent,
        OsmosisMemorySession,
        OsmosisRolloutModel,
    )

    def multiply(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    agent = OsmosisAgent(
        name="multiplier",
        instructions="You multiply numbers. Use the multiply tool, then answer as '#### <n>'.",
        model=OsmosisRolloutModel(**_timeout()),
        model_settings=ModelSettings(temperature=1.0, max_tokens=1024),
        tools=[function_tool(multiply)],
    )

    class MultiplyWorkflow(AgentWorkflow):
        async def run(self, ctx: Any) -> None:
            await Runner.run(agent, ctx.prompt, session=OsmosisMemorySession(), max_turns=8)

    return LocalBackend(workflow=MultiplyWorkflow, grader=grader)


def _simple_backend(kind: str, grader: type) -> Any:
    import httpx

    from osmosis_ai.rollout import (
        AgentWorkflow,
        AgentWorkflowConfig,
        AgentWorkflowContext,
        AgentWorkflowOutput,
        LocalBackend,
        get_rollout_context,
    )

    class Workflow(AgentWorkflow[AgentWorkflowConfig]):
        client: httpx.AsyncClient | None = None

        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            if kind == "cpu":
                _busy(float(os.environ.get("BENCH_CPU_MS", "5")) / 1000)
                rollout = get_rollout_context()
                assert rollout is not None
                if Workflow.client is None:
                    Workflow.client = httpx.AsyncClient(timeout=30)
                response = await Workflow.client.post(
                    f"{rollout.chat_completions_url}/chat/completions",
                    json={"model": "m", "messages": ctx.prompt},
                )
                response.raise_for_status()
            answer = {"role": "assistant", "content": f"#### {LABEL}"}
            return AgentWorkflowOutput(messages=[*ctx.prompt, answer])

    return LocalBackend(
        workflow=Workflow, workflow_config=AgentWorkflowConfig(name=kind), grader=grader
    )


def _bare_backend() -> Any:
    from osmosis_ai.rollout.backend.base import ExecutionBackend
    from osmosis_ai.rollout.types import (
        ExecutionOutcome,
        ExecutionRequest,
        ExecutionResult,
        RolloutSample,
        RolloutStatus,
    )

    class Bare(ExecutionBackend):
        """A fixed graded outcome: what is left is the server's (and the channel's) work."""

        async def execute(
            self, request: ExecutionRequest, progress: Any = None
        ) -> ExecutionOutcome:
            answer = {"role": "assistant", "content": f"#### {LABEL}"}
            sample = RolloutSample(
                messages=[*request.prompt, answer], label=request.label, reward=1.0
            )
            result = ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample)
            return ExecutionOutcome(workflow=result, grader=result)

    return Bare()


def build_app(kind: str) -> Any:
    from osmosis_ai.rollout import Grader, GraderContext
    from osmosis_ai.rollout.server import create_rollout_server

    class Exact(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            assert ctx.sample is not None
            text = _text(ctx.sample.messages[-1]).removeprefix("####").strip()
            ctx.set_reward(1.0 if text == ctx.label else 0.0)

    if kind == "strands":
        backend = _strands_backend(Exact)
    elif kind == "openai-agents":
        backend = _openai_agents_backend(Exact)
    elif kind == "bare":
        backend = _bare_backend()
    else:
        backend = _simple_backend(kind, Exact)
    return create_rollout_server(backend=backend, configure_logging=False)


class StallMonitor:
    """Where the server's event loop is late, measured from inside the server process.

    A thread posts a probe onto the loop every 2 ms (``call_soon_threadsafe``) and records how
    late it runs: that is how long any ready callback (an admission's read, for one) waits. GC
    pauses are timed (thread CPU time) through ``gc.callbacks``. Late probes while the process uses little CPU
    and no GC ran point at the OS scheduler (a busy machine), not at the server.
    """

    def __init__(self) -> None:
        import threading

        self.lags: list[float] = []
        self.gc: list[tuple[int, float]] = []
        #: Per full collection: objects it traversed, seconds of CPU it took, objects it freed,
        #: and the most common types it traversed.
        self.gc2: list[tuple[int, float, int, list[tuple[str, int]]]] = []
        self._gc2_types: list[tuple[str, int]] = []
        self._gc_started = 0.0
        self._gc2_tracked = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._probe, daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        import gc

        self._loop = loop
        gc.callbacks.append(self._on_gc)
        self._thread.start()

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            # Counted before the clock starts: the pause is the collection's alone.
            census = heap_census(8)
            self._gc2_tracked = sum(census["generations"])
            self._gc2_types = census["types"]
        now = time.thread_time()  # CPU time: a busy machine's preemption is not counted
        if phase == "start":
            self._gc_started = now
        else:
            self.gc.append((info["generation"], now - self._gc_started))
            if info["generation"] == 2:
                self.gc2.append(
                    (
                        self._gc2_tracked,
                        now - self._gc_started,
                        info["collected"],
                        self._gc2_types,
                    )
                )

    def _probe(self) -> None:
        import threading

        assert self._loop is not None
        while not self._stop.wait(0.002):
            ran = threading.Event()
            sent = time.perf_counter()

            def record(sent: float = sent, ran: threading.Event = ran) -> None:
                self.lags.append(time.perf_counter() - sent)
                ran.set()

            try:
                self._loop.call_soon_threadsafe(record)
            except RuntimeError:
                return  # the loop has closed
            ran.wait(5)

    def stop(self) -> None:
        import gc

        self._stop.set()
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._on_gc)

    def mark(self) -> None:
        """Start of the measured run: forget the warm-up."""
        self.lags.clear()
        self.gc.clear()
        self.gc2.clear()

    def summary(self) -> dict[str, Any]:
        lags = sorted(self.lags) or [0.0]
        gen2 = [d for g, d in self.gc if g == 2]
        return {
            "lag_p50": lags[len(lags) // 2],
            "lag_p99": lags[min(len(lags) - 1, round(0.99 * (len(lags) - 1)))],
            "lag_max": lags[-1],
            "late_10ms": sum(1 for x in lags if x > 0.010),
            "gc_n": len(self.gc),
            "gc_total": sum(d for _, d in self.gc),
            "gc_max": max((d for _, d in self.gc), default=0.0),
            "gc2_n": len(gen2),
            "gc2": self.gc2,
        }


def heap_census(top: int = 15) -> dict[str, Any]:
    """What the collector tracks (outside the frozen start-up state): per generation, and the
    most common types."""
    import collections
    import gc

    counts = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
    return {
        "generations": [len(gc.get_objects(g)) for g in range(3)],
        "frozen": gc.get_freeze_count(),
        "types": counts.most_common(top),
    }


def _monitored(asgi: Any, monitor: StallMonitor) -> Any:
    """``asgi`` that starts ``monitor`` on its loop and answers ``POST /bench/mark``."""

    async def wrapper(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan" and monitor._loop is None:
            monitor.start(asyncio.get_running_loop())
        if scope["type"] == "http" and scope["path"] == "/bench/heap":
            body = json.dumps(heap_census()).encode()
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        if scope["type"] == "http" and scope["path"] == "/bench/pool":
            pool = asgi.state.rollout_service.backend
            body = json.dumps(
                {"start_sec": pool.start_sec, "restart_secs": pool.restart_secs}
            ).encode()
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        if scope["type"] == "http" and scope["path"] == "/bench/stalls":
            if scope["method"] == "POST":
                monitor.mark()
            body = json.dumps(monitor.summary()).encode()
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await asgi(scope, receive, send)

    wrapper.state = asgi.state  # type: ignore[attr-defined]  # serve() drains through it
    return wrapper


def _serve_app() -> None:
    from osmosis_ai.rollout.server import serve
    from osmosis_ai.rollout.server._impl.workers.pool import use_workers

    workers = int(os.environ.get("BENCH_WORKERS", "0"))
    if os.environ.get("BENCH_GC_THRESHOLD"):  # e.g. "10000,10,10": gc.set_threshold in the server
        import gc

        gc.set_threshold(*(int(x) for x in os.environ["BENCH_GC_THRESHOLD"].split(",")))
    if workers:
        use_workers(app, workers)  # a pool even of one (serve(workers=1) runs in process)
    port = int(os.environ["BENCH_PORT"])
    served = _monitored(app, StallMonitor())
    profile_path = os.environ.get("BENCH_PROFILE")
    if not profile_path:
        serve(served, port=port, workers=1, log_level="warning")
        return
    import cProfile

    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    try:
        serve(served, port=port, workers=1, log_level="warning")
    finally:
        profiler.disable()
        profiler.dump_stats(f"{profile_path}.{os.environ['BENCH_APP']}.{workers}")


if os.environ.get("BENCH_APP"):
    app = build_app(os.environ["BENCH_APP"])
    if __name__ == "__main__":
        _serve_app()
