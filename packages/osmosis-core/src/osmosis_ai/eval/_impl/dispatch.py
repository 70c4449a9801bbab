"""Dispatch: start the services a session needs, run the scheduler, stop them in order.

Steps (each a function below): spawn the rollout server child (it imports the rollout, which
takes seconds, while the next steps run) → start the upstream (``mock``: the scripted policy) →
start the policy proxy → preflight the model (:mod:`osmosis_ai.eval._impl.preflight`) → wait for the server's
health → choose the concurrency → run the scheduler with a watcher that stops dispatch as soon
as the child dies.
An :class:`~contextlib.AsyncExitStack` stops everything on every path, the server before the
proxy (it drains its rollouts, which still call the model).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import threading
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any

from osmosis_ai.eval._impl.adaptive import AdaptiveLimit
from osmosis_ai.eval._impl.cost.budget import Budget, CostEstimate
from osmosis_ai.eval._impl.cost.pricing import Pricer, RowPricer, parse_overrides, pricing_hint
from osmosis_ai.eval._impl.fleet.servers import server_capacity
from osmosis_ai.eval._impl.local_server.process import RolloutServerProcess
from osmosis_ai.eval._impl.plan.plan import EvalPlan
from osmosis_ai.eval._impl.preflight import preflight_model
from osmosis_ai.eval._impl.proxy.caller import UpstreamCaller
from osmosis_ai.eval._impl.proxy.calls import PolicyRoutes
from osmosis_ai.eval._impl.proxy.policy_proxy import PolicyProxy
from osmosis_ai.eval._impl.proxy.providers import LOCAL_MODEL_BASE_URL_ENV
from osmosis_ai.eval._impl.proxy.upstream import Upstream
from osmosis_ai.eval._impl.run_dir.journal import Journal
from osmosis_ai.eval._impl.run_dir.layout import RunPaths
from osmosis_ai.eval._impl.run_dir.log import RunLog
from osmosis_ai.eval._impl.scheduler import DispatchHalted, Scheduler, WorkItem

if TYPE_CHECKING:
    from osmosis_ai.eval._impl.proxy.process import ProxyProcess
    from osmosis_ai.rollout.client import RolloutClient
    from osmosis_ai.testing.local_model import LocalModelServer

#: Default concurrency when neither the arguments, the config nor the server say otherwise.
DEFAULT_MAX_IN_FLIGHT = 8

EventSink = Callable[[str, str, dict[str, Any]], None]
RecordSink = Callable[[dict[str, Any]], None]


@dataclass(slots=True)
class DispatchOutcome:
    dispatched: int
    halt_reason: str | None
    #: With ``--servers``: one summary per rollout server (url, status, counts, failure).
    servers: list[dict[str, Any]] = field(default_factory=list)
    stop_code: str | None = None


@dataclass(slots=True)
class DispatchJob:
    """What a session hands to :func:`dispatch` (or to
    :func:`~osmosis_ai.eval._impl.fleet_dispatch.dispatch_fleet`): the plan, the run's files, the
    work items to run, the run's log, and where notices and finished records go."""

    plan: EvalPlan
    paths: RunPaths
    pending: list[WorkItem]
    log: RunLog
    on_event: EventSink
    on_record: RecordSink


async def dispatch(
    job: DispatchJob,
    budget: Budget | None = None,
    confirm: Callable[[CostEstimate], Awaitable[bool]] | None = None,
    limit: AdaptiveLimit | None = None,
) -> DispatchOutcome:
    """Run the job's work items through a fresh rollout server; see the module docstring."""
    plan, log = job.plan, job.log
    current = asyncio.current_task()
    restore_sigterm = _install_sigterm(current)
    try:
        async with AsyncExitStack() as stack:
            # A per-session key: no other local process can admit rollouts to (or cancel) ours.
            server_key = secrets.token_urlsafe(24)
            log.redact.add(server_key)
            local = local_model_for(plan, job.paths)
            server = _spawn_server(plan, job.paths, log, server_key, stack, local)
            # Off the event loop while the child imports the rollout (after its spawn: the
            # spawn runs a preexec_fn, which must not fork a process with other threads).
            pricing = warm_pricer(plan, stack)
            upstream = await _start_upstream(plan, log, stack, local)
            proxy = await _start_proxy(job, upstream, stack, limit)
            if not upstream.is_mock:
                await preflight_model(proxy, plan.upstream, log)
            stack.push_async_callback(server.stop)  # idempotent: stop it before the proxy
            url = await server.wait_healthy(timeout_sec=plan.server_start_timeout_sec)
            log.info("server", "rollout server healthy", url=url, pid=server.pid)
            scheduler = _scheduler(job, url, server, server_key, proxy, stack, await pricing)
            scheduler.budget, scheduler.confirm = budget, confirm
            if limit is not None:  # policy calls at once: at most one per row in flight
                limit.set_ceiling(scheduler.max_in_flight)
            await _run_watched(scheduler, server, job.pending, current)
            log.info(
                "run",
                "dispatch finished; stopping the rollout server",
                dispatched=scheduler.dispatched,
            )
            return DispatchOutcome(
                scheduler.dispatched,
                _halt_reason(scheduler, server),
                stop_code=scheduler.stop_code,
            )
    finally:
        restore_sigterm()


def _close_quietly(file: IO[str]) -> None:
    with contextlib.suppress(OSError):
        file.close()


def _child_env(
    plan: EvalPlan, paths: RunPaths, local: LocalModelServer | None = None
) -> dict[str, str]:
    env = dict(os.environ)
    # The rollout reaches the model only through the proxy; it never sees the upstream key
    # unless it declares that variable as one of its own secrets.
    if plan.upstream.key_env and plan.upstream.key_env not in plan.secrets:
        env.pop(plan.upstream.key_env, None)
    env.update(plan.env)
    env.update(plan.secrets)
    env["_OSMOSIS_ROLLOUT_ARTIFACT_ROOT"] = str(paths.rollout_trials)
    env["OSMOSIS_ROLLOUT_WORKERS"] = str(plan.workers)
    env.pop("_OSMOSIS_ROLLOUT_PORT", None)  # only --rollout-port chooses the port
    if plan.options.rollout_port is not None:
        env["_OSMOSIS_ROLLOUT_PORT"] = str(plan.options.rollout_port)
    if plan.options.verbose:
        env["_OSMOSIS_EVAL_SERVER_LOG_LEVEL"] = "info"
    if local is not None:  # a grader's Judge("local/...") reaches the same model
        env[LOCAL_MODEL_BASE_URL_ENV] = local.base_url
    return env


def _spawn_server(
    plan: EvalPlan,
    paths: RunPaths,
    log: RunLog,
    server_key: str,
    stack: AsyncExitStack,
    local: LocalModelServer | None = None,
) -> RolloutServerProcess:
    server = RolloutServerProcess(
        entrypoint=plan.entrypoint,
        rollout_dir=plan.rollout_dir,
        log_path=paths.server_log,
        env=_child_env(plan, paths, local),
        isolated=plan.options.isolated,
        api_key=server_key,
        redact=log.redact,
    )
    stack.push_async_callback(server.stop)
    log.info("server", "starting rollout server", command=" ".join(server.command()))
    server.spawn()
    return server


def local_model_for(plan: EvalPlan, paths: RunPaths) -> LocalModelServer | None:
    """``--model local``: the model server to start (its port already chosen, so the rollout
    server can be told it before either starts), its output in ``local_model.log``."""
    if not plan.upstream.is_local:
        return None
    from osmosis_ai.testing.local_model import LocalModelServer

    model = LocalModelServer(log_path=paths.local_model_log)
    model.choose_port()
    return model


async def _start_upstream(
    plan: EvalPlan, log: RunLog, stack: AsyncExitStack, model: LocalModelServer | None = None
) -> Upstream:
    """``mock``: start the scripted policy (the multiply solver, or the ``--mock-script``);
    ``local``: start the embedded real model (``model``, from :func:`local_model_for`); then
    point the upstream at it."""
    upstream = plan.upstream
    if model is not None:
        log.info("upstream", "starting the local model", command=" ".join(model.command()))
        stack.push_async_callback(model.astop)
        await model.astart()
        log.info(
            "upstream",
            "local model serving (SmolLM2-135M-Instruct on llama.cpp's server)",
            url=model.base_url,
            model_file=str(model.model_path),
            pid=model.pid,
        )
        return replace(upstream, base_url=model.base_url)
    if not upstream.is_mock:
        return upstream
    from osmosis_ai.testing import ScriptedPolicyServer

    policy = ScriptedPolicyServer(plan.mock_policy or "multiply", max_recorded=0, model="mock")
    await policy.start()
    stack.push_async_callback(policy.stop)
    log.info(
        "upstream",
        "started the scripted mock policy (a plumbing check; rewards mean nothing)",
        url=policy.url,
        script=upstream.mock_script,
    )
    return replace(upstream, base_url=policy.url)


async def _start_proxy(
    job: DispatchJob,
    upstream: Upstream,
    stack: AsyncExitStack,
    limit: AdaptiveLimit | None = None,
) -> PolicyProxy:
    plan, log, on_event = job.plan, job.log, job.on_event
    caller = UpstreamCaller(
        upstream,
        limit=limit,
        retry=plan.tuning.retry_policy,
        on_event=lambda kind, d: on_event("warning", kind, d),
    )
    proxy = PolicyProxy(caller, token_ids=plan.options.token_ids)
    # Beyond loopback only when asked (--proxy-host); every rollout has its own bearer token.
    await proxy.start(plan.proxy_host, plan.proxy_port)
    stack.push_async_callback(proxy.aclose)
    proxy.calls_file = job.paths.llm_calls.open("a", encoding="utf-8")
    # Best effort like its writes: a full disk at the final flush must not replace the error
    # that stopped the run (the journal's, which names its file).
    stack.callback(_close_quietly, proxy.calls_file)
    announce_proxy(plan, log, proxy)
    return proxy


def announce_proxy(plan: EvalPlan, log: RunLog, proxy: PolicyProxy | ProxyProcess) -> None:
    """Point the routes at ``--proxy-url`` (when given) and log where the proxy listens."""
    if plan.proxy_url:  # the address the rollout servers reach the proxy at
        proxy.base_url = plan.proxy_url
    pid = getattr(proxy, "pid", None)  # its own process (--servers)
    log.info(
        "proxy",
        "policy proxy listening",
        url=proxy.base_url,
        upstream=proxy.upstream.display_url,
        model=proxy.upstream.model,
        **({} if pid is None else {"pid": pid}),
    )


def _scheduler(
    job: DispatchJob,
    url: str,
    server: RolloutServerProcess,
    server_key: str,
    proxy: PolicyProxy,
    stack: AsyncExitStack,
    price_row: RowPricer,
) -> Scheduler:
    max_in_flight = _max_in_flight(job.plan, server.health, job.log)
    # Admission waits (429 backoff) are bounded by deadline x concurrency, as upstream.
    client = _rollout_client(url, server_key, job.plan.deadline_sec * max_in_flight, stack)
    return build_scheduler(
        job, client, max_in_flight, proxy, stack, lambda: server.exited() is None, price_row
    )


def build_scheduler(
    job: DispatchJob,
    client: RolloutClient,
    max_in_flight: int,
    proxy: PolicyRoutes,
    stack: AsyncExitStack,
    server_alive: Callable[[], bool],
    price_row: RowPricer,
) -> Scheduler:
    """The scheduler over ``client`` with the run's journal, call log, deadline and pricing
    (``price_row``, from :func:`warm_pricer`), reporting to the job's sinks."""
    plan = job.plan
    journal = Journal(job.paths.journal)
    stack.push_async_callback(journal.aclose)
    return Scheduler(
        client=client,
        proxy=proxy,
        journal=journal,
        max_in_flight=max_in_flight,
        attempt_tag=datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        agent_timeout_sec=plan.knobs.agent_timeout_sec,
        grader_timeout_sec=plan.knobs.grader_timeout_sec,
        deadline_sec=plan.deadline_sec,
        server_alive=server_alive,
        redact=job.log.redact,
        price_row=price_row,
        max_failures=plan.options.max_failures,
        code_digest=plan.inputs["rollout"]["source_digest"],
        on_result=job.on_record,
        on_event=job.on_event,
    )


def warm_pricer(plan: EvalPlan, stack: AsyncExitStack) -> asyncio.Task[RowPricer]:
    """The run's :class:`RowPricer`, once its first price look-up (:meth:`RowPricer.warm`) has
    run on a helper thread; await it before the scheduler starts. The stack waits for the
    thread on every path, so no look-up outlives the session."""

    async def warmed(price_row: RowPricer) -> RowPricer:
        await asyncio.to_thread(price_row.warm)
        return price_row

    task = asyncio.create_task(warmed(_row_pricer(plan)))
    stack.push_async_callback(asyncio.wait, [task])
    return task


def _row_pricer(plan: EvalPlan) -> RowPricer:
    """The run's cost ledger: ``[pricing]`` overrides first, then the pricing library."""
    config = plan.config
    overrides = parse_overrides(config.pricing if config is not None else None)
    upstream = plan.upstream
    return RowPricer(
        Pricer(overrides),
        upstream.model,
        None if upstream.is_mock else upstream.base_url,
        fixed_reason=_fixed_price_reason(upstream, overrides),
    )


def _fixed_price_reason(upstream: Upstream, overrides: Mapping[str, Any]) -> str | None:
    """Why a run's own policy server has no price (unless ``[pricing]`` gives one)."""
    if upstream.model in overrides:
        return None
    if upstream.is_mock:
        return f"the mock policy has no price; {pricing_hint(upstream.model)}"
    if upstream.is_local:
        return (
            f"the local model runs on this machine and has no price; {pricing_hint(upstream.model)}"
        )
    return None


async def _run_watched(
    scheduler: Scheduler,
    server: RolloutServerProcess,
    pending: list[WorkItem],
    current: asyncio.Task[Any] | None,
) -> None:
    run_task = asyncio.create_task(scheduler.run(pending))
    watch_task = asyncio.create_task(_watch_server(server, run_task))
    try:
        await run_task
    except DispatchHalted:
        pass
    except asyncio.CancelledError:
        if current is not None and current.cancelling():
            raise  # the user interrupted the session
        # otherwise the watcher stopped dispatch because the server died
    finally:
        watch_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watch_task
        if not run_task.done():
            run_task.cancel()
            with contextlib.suppress(BaseException):
                await run_task


def _halt_reason(scheduler: Scheduler, server: RolloutServerProcess) -> str | None:
    if server.exited() is None:
        return scheduler.halt_reason
    tail = server.output_tail()
    return f"the rollout server exited (code {server.exited()})" + (f"\n{tail}" if tail else "")


async def _watch_server(server: RolloutServerProcess, run_task: asyncio.Task[None]) -> None:
    """Stop dispatch as soon as the child dies (rather than waiting for timeouts)."""
    while not run_task.done():
        if server.exited() is not None:
            run_task.cancel()
            return
        await asyncio.sleep(0.1)


def _rollout_client(
    url: str, api_key: str, admission_timeout: float, stack: AsyncExitStack
) -> RolloutClient:
    """The workers' client: one :class:`RolloutClient` that makes its own HTTP client.

    The rollout server is plain HTTP on 127.0.0.1, so admission and long polls go straight
    through the client's :class:`~osmosis_ai._util.http_transport.PlainHTTPTransport` (httpx's
    request/response machinery costs more CPU than the exchange), whose cost per request does
    not grow with the connections open: the workers can share it.
    """
    from osmosis_ai.rollout.client import RolloutClient

    client = RolloutClient(url=url, admission_timeout_sec=admission_timeout, api_key=api_key)
    stack.push_async_callback(client.aclose)
    return client


def _max_in_flight(plan: EvalPlan, health: dict[str, Any], log: RunLog) -> int:
    capacity = server_capacity(health)
    wanted = plan.knobs.max_in_flight
    if wanted is None:
        chosen = capacity or DEFAULT_MAX_IN_FLIGHT
    elif capacity is not None and wanted > capacity:
        log.warning(
            "plan",
            "max_in_flight capped by the rollout server's capacity",
            wanted=wanted,
            capacity=capacity,
        )
        chosen = capacity
    else:
        chosen = wanted
    log.info("plan", "concurrency chosen", max_in_flight=chosen, server_capacity=capacity)
    return max(1, chosen)


def _install_sigterm(task: asyncio.Task[Any] | None) -> Callable[[], None]:
    """SIGTERM behaves like Ctrl-C: cancel the session, which leaves a resumable run."""
    if task is None or threading.current_thread() is not threading.main_thread():
        return lambda: None
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    except (NotImplementedError, RuntimeError):
        return lambda: None

    def restore() -> None:
        loop.remove_signal_handler(signal.SIGTERM)

    return restore
