"""Dispatch over already-running rollout servers (``eval run --servers``).

The same steps as :func:`~osmosis_ai.eval._impl.dispatch.dispatch` without the child server: start
the upstream and the policy proxy (on the controller; reachable from other machines only with
``--proxy-host``/``--proxy-url``), preflight the model, probe every server's ``/health``, then run
the one :class:`~osmosis_ai.eval._impl.scheduler.Scheduler` over a
:class:`~osmosis_ai.eval._impl.fleet.client.FleetClient` while the fleet's health watcher runs.
Servers that cannot be reached at the start are reported and left out; when none answers,
nothing is dispatched.
"""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, cast

from osmosis_ai.eval._impl.dispatch import (
    DispatchJob,
    DispatchOutcome,
    EventSink,
    _install_sigterm,
    _start_upstream,
    announce_proxy,
    build_scheduler,
    local_model_for,
    warm_pricer,
)
from osmosis_ai.eval._impl.fleet.client import FleetClient, open_member
from osmosis_ai.eval._impl.fleet.pool import Fleet, watching
from osmosis_ai.eval._impl.fleet.servers import remote_servers
from osmosis_ai.eval._impl.local_server.process import RolloutServerError
from osmosis_ai.eval._impl.preflight import preflight_model
from osmosis_ai.eval._impl.scheduler import DispatchHalted

if TYPE_CHECKING:
    from osmosis_ai.eval._impl.plan.plan import EvalPlan
    from osmosis_ai.eval._impl.proxy.process import ProxyProcess
    from osmosis_ai.eval._impl.proxy.upstream import Upstream
    from osmosis_ai.eval._impl.run_dir.log import RunLog
    from osmosis_ai.rollout.client import RolloutClient


async def dispatch_fleet(job: DispatchJob) -> DispatchOutcome:
    """Run the job's work items on ``plan.servers``; see the module docstring."""
    plan, log, on_event = job.plan, job.log, job.on_event
    restore_sigterm = _install_sigterm(asyncio.current_task())
    if plan.servers_api_key:
        log.redact.add(plan.servers_api_key)
    fleet: Fleet | None = None
    try:
        async with AsyncExitStack() as stack:
            upstream = await _start_upstream(plan, log, stack, local_model_for(plan, job.paths))
            pricing = warm_pricer(plan, stack)  # on a thread while the proxy process starts
            # The servers' /health probes run while the proxy process starts (imports take a
            # second); the model's preflight still decides first.
            opening = asyncio.create_task(_open_fleet(plan, log, on_event, stack))
            try:
                proxy = await _start_proxy_process(job, upstream, stack)
                _warn_unreachable_proxy(plan, proxy, on_event)
                _warn_local_only_settings(plan, on_event)
                if not upstream.is_mock:
                    await preflight_model(proxy, plan.upstream, log)
                fleet = await opening
            except BaseException:
                opening.cancel()
                await asyncio.gather(opening, return_exceptions=True)
                raise
            wanted = plan.knobs.max_in_flight or fleet.total_capacity
            workers = max(1, min(wanted, fleet.total_capacity))
            log.info("plan", "concurrency chosen", max_in_flight=workers, servers=len(plan.servers))
            client = cast("RolloutClient", FleetClient(fleet, proxy))  # the two calls it makes
            scheduler = build_scheduler(
                job, client, workers, proxy, stack, fleet.any_alive, await pricing
            )
            async with watching(fleet):
                with contextlib.suppress(DispatchHalted):  # the reason is in halt_reason
                    await scheduler.run(job.pending)
            log.info("run", "dispatch finished", dispatched=scheduler.dispatched)
            return DispatchOutcome(scheduler.dispatched, scheduler.halt_reason, fleet.summaries())
    finally:
        restore_sigterm()
        if fleet is not None:
            for summary in fleet.summaries():
                log.info("server", "rollout server summary", **summary)


async def _start_proxy_process(
    job: DispatchJob, upstream: Upstream, stack: AsyncExitStack
) -> ProxyProcess:
    """The policy proxy in its own process (see :mod:`osmosis_ai.eval._impl.proxy.process`)."""
    from osmosis_ai.eval._impl.proxy.process import ProxyProcess

    plan, log, on_event = job.plan, job.log, job.on_event
    proxy = ProxyProcess(
        upstream,
        calls_path=job.paths.llm_calls,
        retry=plan.tuning.retry_policy,
        token_ids=plan.options.token_ids,
        on_event=lambda kind, details: on_event("warning", kind, details),
        redact=log.redact,
    )
    stack.push_async_callback(proxy.aclose)
    # Beyond loopback only when asked (--proxy-host); every rollout has its own bearer token.
    await proxy.start(plan.proxy_host, plan.proxy_port)
    announce_proxy(plan, log, proxy)
    return proxy


async def _open_fleet(
    plan: EvalPlan, log: RunLog, on_event: EventSink, stack: AsyncExitStack
) -> Fleet:
    members = []
    for url in plan.servers:
        member = open_member(url, plan.servers_api_key, plan.deadline_sec * 64)
        stack.push_async_callback(member.client.aclose)
        members.append(member)
    fleet = Fleet(members, on_event=on_event)
    problems = await fleet.start()
    if len(problems) == len(members):
        raise RolloutServerError(
            "none of the rollout servers answered /health: " + "; ".join(problems)
        )
    for problem in problems:
        on_event(
            "warning",
            "rollout server left out: not reachable at start",
            {"code": "SERVER_UNREACHABLE", "reason": problem},
        )
    for member in members:
        log.info("server", "rollout server", url=member.url, capacity=member.capacity)
    return fleet


def _warn_local_only_settings(plan: EvalPlan, on_event: EventSink) -> None:
    """``[env]`` and secrets configure a server this run starts; running servers have their own."""
    names = sorted({*plan.env, *plan.secrets})
    if names:
        on_event(
            "warning",
            f"{', '.join(names)} from the eval config reach a local rollout server only; the "
            "--servers already run with their own environment (osmosis rollout deploy --secret "
            "NAME passes secrets to a fleet)",
            {"code": "SERVER_ENV_NOT_SENT", "names": names},
        )


def _warn_unreachable_proxy(plan: EvalPlan, proxy: ProxyProcess, on_event: EventSink) -> None:
    """Remote servers cannot call a proxy that only listens on this machine's loopback."""
    remote = remote_servers(plan.servers)
    if remote and plan.proxy_url is None:
        details: dict[str, Any] = {"code": "PROXY_LOOPBACK_ONLY", "proxy": proxy.base_url}
        on_event(
            "warning",
            f"the policy proxy listens on {proxy.base_url} (this machine only), but "
            f"{len(remote)} server(s) are remote: tunnel it to them (ssh -R) and pass "
            "--proxy-url, or pass --proxy-host 0.0.0.0 --proxy-url http://<this-host>:<port> "
            "(docs/operations.md, running at scale)",
            details,
        )
