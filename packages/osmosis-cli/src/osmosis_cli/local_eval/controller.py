"""The local eval controller: one :func:`run_eval` call = one session of a run.

Sequence: lock the run name → (``--fresh``: archive) → check or write the manifest → read the
journal to find pending work items → start the upstream (``mock``: the scripted policy), the
policy proxy and the rollout server child → schedule → stop everything (the server drains and
writes its trajectories) → rebuild ``index.jsonl``, trajectories and ``metrics.json``.

Why the session ends the same way on every path (done, partial, halted, interrupted): the
results on disk must always describe the journal, and the child server must always be gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import threading
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from osmosis_cli.local_eval.journal import Journal, WorkKey, load_latest
from osmosis_cli.local_eval.manifest import (
    check_manifest,
    read_manifest,
    write_json_atomic,
    write_manifest,
)
from osmosis_cli.local_eval.metrics import ItemResult, compute_metrics
from osmosis_cli.local_eval.plan import EvalPlan
from osmosis_cli.local_eval.proxy import PolicyProxy
from osmosis_cli.local_eval.run_layout import RunLock, RunPaths, archive_run
from osmosis_cli.local_eval.run_log import Redactor, RunLog
from osmosis_cli.local_eval.scheduler import DispatchHalted, Scheduler, WorkItem, item_deadline
from osmosis_cli.local_eval.server_process import RolloutServerError, RolloutServerProcess
from osmosis_cli.local_eval.trajectories import load_calls, trajectory_for

if TYPE_CHECKING:
    from osmosis_ai.rollout.client import RolloutClient

#: Default concurrency when neither the flags, the config nor the server say otherwise.
DEFAULT_MAX_IN_FLIGHT = 8


@dataclass(slots=True)
class Progress:
    """Live counters handed to the reporter after every result."""

    total: int
    already_done: int = 0
    pending_at_start: int = 0
    succeeded: int = 0
    failed: int = 0
    skipped: int = 0
    reward_sum: float = 0.0

    @property
    def finished_this_session(self) -> int:
        return self.succeeded + self.failed + self.skipped

    @property
    def mean_reward(self) -> float | None:
        return self.reward_sum / self.succeeded if self.succeeded else None


class Reporter(Protocol):
    """What the command shows while a run progresses (Rich bar, JSON: nothing)."""

    def planned(self, plan: EvalPlan, progress: Progress, resumed: bool) -> None: ...

    def result(self, record: dict[str, Any], progress: Progress) -> None: ...

    def event(self, level: str, message: str, details: dict[str, Any]) -> None: ...


class SilentReporter:
    def planned(self, plan: EvalPlan, progress: Progress, resumed: bool) -> None:
        return None

    def result(self, record: dict[str, Any], progress: Progress) -> None:
        return None

    def event(self, level: str, message: str, details: dict[str, Any]) -> None:
        return None


@dataclass(slots=True)
class EvalRunResult:
    """What the command prints: the ``eval.run`` resource plus a status."""

    status: str  # success | partial | interrupted
    run_name: str
    local_run_id: str
    output_path: str
    dataset_source: str
    model: str
    rollout_name: str
    total_work_items: int
    dispatched: int
    succeeded: int
    failed: int
    skipped: int
    resumed: int
    pending: int
    duration_ms: float
    metrics: dict[str, Any]
    failed_rows: list[dict[str, Any]] = field(default_factory=list)
    archived_to: str | None = None
    halt_reason: str | None = None

    def resource(self) -> dict[str, Any]:
        return {
            "run_name": self.run_name,
            "local_run_id": self.local_run_id,
            "output_path": self.output_path,
            "dataset_source": self.dataset_source,
            "model": self.model,
            "rollout": self.rollout_name,
            "total_work_items": self.total_work_items,
            "dispatched": self.dispatched,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "skipped": self.skipped,
            "resumed": self.resumed,
            "pending": self.pending,
            "cancelled": self.pending if self.status == "interrupted" else 0,
            "duration_ms": round(self.duration_ms, 1),
            "metrics": self.metrics,
            "failed_rows": self.failed_rows,
            "archived_to": self.archived_to,
            "halt_reason": self.halt_reason,
        }


class EvalRunFailed(RuntimeError):
    """The session could not run at all (e.g. the rollout server would not start)."""

    def __init__(self, message: str, result: EvalRunResult | None = None) -> None:
        self.result = result
        super().__init__(message)


class UpstreamRejected(RuntimeError):
    """The model endpoint refused the preflight request (bad key, unknown model...)."""

    def __init__(self, message: str, status_code: int) -> None:
        self.status_code = status_code
        super().__init__(message)


#: Preflight answers that will fail every work item the same way.
_FATAL_PREFLIGHT = frozenset({401, 403, 404})


async def _preflight(proxy: PolicyProxy, upstream: Any, log: RunLog) -> None:
    status, excerpt = await proxy.preflight()
    excerpt = log.redact(excerpt)
    if status == 200:
        log.info("upstream", "model preflight ok", model=upstream.model)
        return
    fatal = status in _FATAL_PREFLIGHT or (status == 400 and "model" in excerpt.lower())
    if not fatal:  # rate limits, outages: every call is retried anyway
        log.warning("upstream", "model preflight did not succeed", status=status, body=excerpt)
        return
    hint = {
        401: f"check the API key{f' in {upstream.key_env}' if upstream.key_env else ''} "
        "(or pass --api-key-env)",
        403: "the key is not allowed to use this model",
        404: "check the model name and --base-url",
    }.get(status or 0, "check the model name")
    raise UpstreamRejected(
        f"the model endpoint {upstream.base_url} rejected model {upstream.model!r} with HTTP "
        f"{status}: {excerpt}; {hint}",
        status or 0,
    )


def _work_items(plan: EvalPlan) -> list[WorkItem]:
    return [
        WorkItem(row_index=row_index, run_index=run_index, row=row)
        for row_index, row in enumerate(plan.rows)
        for run_index in range(plan.n)
    ]


def _is_done(record: dict[str, Any], retry_failed: bool) -> bool:
    status = record.get("status")
    if retry_failed:
        return status == "success"
    return status in ("success", "failed", "skipped")


def _child_env(plan: EvalPlan, paths: RunPaths) -> dict[str, str]:
    env = dict(os.environ)
    # The rollout reaches the model only through the proxy; it never sees the upstream key
    # unless it declares that variable as one of its own secrets.
    if plan.upstream.key_env and plan.upstream.key_env not in plan.secrets:
        env.pop(plan.upstream.key_env, None)
    env.update(plan.env)
    env.update(plan.secrets)
    env["_OSMOSIS_ROLLOUT_ARTIFACT_ROOT"] = str(paths.rollout_trials)
    return env


async def run_eval(plan: EvalPlan, reporter: Reporter | None = None) -> EvalRunResult:
    """Run (or resume) the plan's run; see the module docstring."""
    reporter = reporter or SilentReporter()
    started_at = datetime.now(UTC)
    t0 = time.perf_counter()
    paths = RunPaths(plan.run_dir)
    plan.output_root.mkdir(parents=True, exist_ok=True)
    lock = RunLock(plan.output_root, plan.run_name)
    lock.acquire()
    try:
        archived = archive_run(paths.root) if plan.fresh else None
        manifest = read_manifest(paths.manifest)
        if manifest is not None:
            check_manifest(manifest, plan.run_name, plan.inputs)
        paths.create()
        if manifest is None:
            manifest = write_manifest(
                paths.manifest,
                plan.run_name,
                plan.inputs,
                {
                    "config_path": str(plan.config_path),
                    "dataset_path": str(plan.dataset_path),
                    "rollout_dir": str(plan.rollout_dir),
                    "upstream_base_url": plan.upstream.base_url or None,
                },
            )
        redactor = Redactor()
        redactor.add(plan.upstream.api_key)
        for value in plan.secrets.values():
            redactor.add(value)
        log = RunLog(paths.logs, redactor)
        try:
            return await _session(plan, paths, manifest, log, reporter, started_at, t0, archived)
        finally:
            log.close()
    finally:
        lock.release()


async def _session(
    plan: EvalPlan,
    paths: RunPaths,
    manifest: dict[str, Any],
    log: RunLog,
    reporter: Reporter,
    started_at: datetime,
    t0: float,
    archived: Any,
) -> EvalRunResult:
    items = _work_items(plan)
    prior = load_latest(paths.journal)
    pending = [
        i
        for i in items
        if not _is_done(prior.get((i.row_index, i.run_index), {}), plan.retry_failed)
    ]
    progress = Progress(
        total=len(items), already_done=len(items) - len(pending), pending_at_start=len(pending)
    )
    log.info(
        "plan",
        "session starting",
        run=plan.run_name,
        total=len(items),
        pending=len(pending),
        model=plan.upstream.model,
        rollout=plan.config.rollout,
        dataset=str(plan.dataset_path),
        retry_failed=plan.retry_failed,
    )
    reporter.planned(plan, progress, resumed=bool(prior))

    def on_event(level: str, message: str, details: dict[str, Any]) -> None:
        log.log(level, "run", message, **details)
        reporter.event(level, message, details)

    def on_result(record: dict[str, Any]) -> None:
        status = record["status"]
        if status == "success":
            progress.succeeded += 1
            progress.reward_sum += record["reward"]
        elif status == "failed":
            progress.failed += 1
            log.warning(
                "result",
                "work item failed",
                **{
                    k: record.get(k)
                    for k in ("row_index", "run_index", "rollout_id", "error_type", "error_message")
                },
            )
        else:
            progress.skipped += 1
        reporter.result(record, progress)

    session_ids: set[str] = set()
    interrupted = False
    halt_reason: str | None = None
    dispatched = 0
    fatal: BaseException | None = None
    if pending:
        try:
            dispatched, halt_reason = await _dispatch(
                plan, paths, pending, log, on_event, on_result, session_ids
            )
        except asyncio.CancelledError:
            interrupted = True
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            log.warning("run", "interrupted; in-flight work items stay pending")
        except RolloutServerError as exc:
            fatal = exc
            halt_reason = str(exc)
            log.error("server", "rollout server failed", error=str(exc))
        except UpstreamRejected as exc:
            log.error("upstream", "model preflight failed", error=str(exc))
            raise
    result = _finalize(
        plan,
        paths,
        manifest,
        items,
        prior,
        session_ids,
        started_at,
        t0,
        interrupted,
        halt_reason,
        dispatched,
        archived,
    )
    log.info(
        "finish",
        "session finished",
        status=result.status,
        succeeded=result.succeeded,
        failed=result.failed,
        skipped=result.skipped,
        pending=result.pending,
    )
    if fatal is not None and result.dispatched == 0:
        raise EvalRunFailed(str(fatal), result) from fatal
    return result


async def _dispatch(
    plan: EvalPlan,
    paths: RunPaths,
    pending: list[WorkItem],
    log: RunLog,
    on_event: Callable[[str, str, dict[str, Any]], None],
    on_result: Callable[[dict[str, Any]], None],
    session_ids: set[str],
) -> tuple[int, str | None]:
    upstream = plan.upstream
    current = asyncio.current_task()
    restore_sigterm = _install_sigterm(current)
    try:
        async with AsyncExitStack() as stack:
            # A per-session key: no other local process can admit rollouts to (or cancel) ours.
            server_key = secrets.token_urlsafe(24)
            log.redact.add(server_key)
            server = RolloutServerProcess(
                entrypoint=plan.entrypoint,
                rollout_dir=plan.rollout_dir,
                log_path=paths.server_log,
                env=_child_env(plan, paths),
                isolated=plan.isolated,
                api_key=server_key,
                redact=log.redact,
            )
            stack.push_async_callback(server.stop)
            log.info("server", "starting rollout server", command=" ".join(server.command()))
            # The child imports its rollout (seconds) while we start the upstream and proxy.
            server.spawn()

            if upstream.is_mock:
                from osmosis_ai.testing import ScriptedPolicyServer

                policy = ScriptedPolicyServer("multiply", max_recorded=0, model="mock")
                await policy.start()
                stack.push_async_callback(policy.stop)
                upstream = replace(upstream, base_url=policy.url)
                log.info(
                    "upstream",
                    "started the scripted mock policy (a plumbing check; rewards mean nothing)",
                    url=policy.url,
                )
            proxy = PolicyProxy(
                upstream,
                retry=plan.retry_policy,
                on_event=lambda kind, d: on_event("warning", kind, d),
            )
            await proxy.start()
            stack.push_async_callback(proxy.aclose)
            log.info(
                "proxy",
                "policy proxy listening",
                url=proxy.base_url,
                upstream=upstream.base_url,
                model=upstream.model,
            )

            if not plan.upstream.is_mock:
                await _preflight(proxy, upstream, log)
            stack.push_async_callback(server.stop)  # idempotent: stop it before the proxy
            url = await server.wait_healthy(timeout_sec=plan.server_start_timeout_sec)
            log.info("server", "rollout server healthy", url=url, pid=server.pid)

            deadline = plan.item_deadline_sec or item_deadline(
                plan.agent_timeout_sec, plan.grader_timeout_sec
            )
            max_in_flight = _max_in_flight(plan, server.health, log)
            # Admission waits (429 backoff) are bounded by deadline x concurrency, as upstream.
            clients = _rollout_clients(
                url, server_key, deadline * max_in_flight, max_in_flight, stack
            )
            calls_file = paths.llm_calls.open("a", encoding="utf-8")
            stack.callback(calls_file.close)
            journal = Journal(paths.journal)
            stack.push_async_callback(journal.aclose)
            attempt_tag = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")

            def record_result(record: dict[str, Any]) -> None:
                session_ids.add(record["rollout_id"])
                on_result(record)

            scheduler = Scheduler(
                clients=clients,
                proxy=proxy,
                journal=journal,
                max_in_flight=max_in_flight,
                attempt_tag=attempt_tag,
                llm_calls_file=calls_file,
                agent_timeout_sec=plan.agent_timeout_sec,
                grader_timeout_sec=plan.grader_timeout_sec,
                deadline_sec=deadline,
                on_result=record_result,
                on_event=on_event,
                server_alive=lambda: server.exited() is None,
                redact=log.redact,
            )
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
            halt = scheduler.halt_reason
            log.info(
                "run",
                "dispatch finished; stopping the rollout server",
                dispatched=scheduler.dispatched,
            )
            if server.exited() is not None:
                tail = server.output_tail()
                halt = f"the rollout server exited (code {server.exited()})" + (
                    f"\n{tail}" if tail else ""
                )
            return scheduler.dispatched, halt
    finally:
        restore_sigterm()


async def _watch_server(server: RolloutServerProcess, run_task: asyncio.Task[None]) -> None:
    """Stop dispatch as soon as the child dies (rather than waiting for timeouts)."""
    while not run_task.done():
        if server.exited() is not None:
            run_task.cancel()
            return
        await asyncio.sleep(0.1)


def _rollout_clients(
    url: str, api_key: str, admission_timeout: float, count: int, stack: AsyncExitStack
) -> list[RolloutClient]:
    """One client per worker (see :class:`Scheduler`) on the lean loopback transport.

    The rollout server is plain HTTP on 127.0.0.1; :class:`PlainHTTPTransport` costs a third of
    httpx's default transport per request, and each worker keeping its own connections makes
    reuse trivially safe.
    """
    import httpx

    from osmosis_ai.http_transport import PlainHTTPTransport
    from osmosis_ai.rollout.client import RolloutClient

    clients: list[RolloutClient] = []
    for _ in range(count):
        http = httpx.AsyncClient(
            transport=PlainHTTPTransport(max_idle_per_host=4),
            timeout=httpx.Timeout(60.0),
            follow_redirects=False,
        )
        stack.push_async_callback(http.aclose)  # RolloutClient closes only clients it made
        clients.append(
            RolloutClient(
                url=url, http_client=http, admission_timeout_sec=admission_timeout, api_key=api_key
            )
        )
    return clients


def _max_in_flight(plan: EvalPlan, health: dict[str, Any], log: RunLog) -> int:
    capacity: int | None = None
    concurrency = health.get("concurrency")
    if isinstance(concurrency, dict) and isinstance(concurrency.get("max_concurrent"), int):
        capacity = concurrency["max_concurrent"]
    elif isinstance(health.get("max_queue_depth"), int):
        capacity = health["max_queue_depth"]
    wanted = plan.max_in_flight
    if wanted is None:
        chosen = capacity or DEFAULT_MAX_IN_FLIGHT
    elif capacity is not None and wanted > capacity:
        log.warning(
            "plan",
            "--max-in-flight capped by the rollout server's capacity",
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


def _finalize(
    plan: EvalPlan,
    paths: RunPaths,
    manifest: dict[str, Any],
    items: list[WorkItem],
    prior: dict[WorkKey, dict[str, Any]],
    session_ids: set[str],
    started_at: datetime,
    t0: float,
    interrupted: bool,
    halt_reason: str | None,
    dispatched: int,
    archived: Any,
) -> EvalRunResult:
    latest = load_latest(paths.journal)
    calls_by_rollout = load_calls(paths) if session_ids else {}
    index_lines: list[dict[str, Any]] = []
    results: list[ItemResult] = []
    failed_rows: list[dict[str, Any]] = []
    resumed = 0
    for item in items:
        key = (item.row_index, item.run_index)
        record = latest.get(key)
        if record is None:
            continue
        this_session = record.get("rollout_id") in session_ids
        if not this_session:
            resumed += 1
        trajectory = trajectory_for(
            paths,
            record,
            calls_by_rollout.get(str(record.get("rollout_id")), []),
            rebuild=this_session,
        )
        index_lines.append(
            {
                "row_index": item.row_index,
                "run_index": item.run_index,
                "source_row_index": item.row.source_index,
                "rollout_id": record.get("rollout_id"),
                "trajectory_filename": trajectory,
                "status": record.get("status"),
                "reward": record.get("reward"),
                "tokens": record.get("tokens", 0),
                "duration_ms": record.get("duration_ms"),
                "error_type": record.get("error_type"),
                "resumed": not this_session,
            }
        )
        results.append(
            ItemResult(
                row_index=item.row_index,
                run_index=item.run_index,
                status=str(record.get("status")),
                reward=record.get("reward"),
                tokens=int(record.get("tokens") or 0),
                error_type=record.get("error_type"),
            )
        )
        if record.get("status") == "failed":
            failed_rows.append(
                {
                    "row_index": item.row_index,
                    "source_row_index": item.row.source_index,
                    "run_index": item.run_index,
                    "rollout_id": record.get("rollout_id"),
                    "error_type": record.get("error_type"),
                    "error_message": record.get("error_message"),
                    "rollout_dir": str(paths.rollout_trials / str(record.get("rollout_id"))),
                }
            )
    summary = compute_metrics(
        results,
        samples_per_row=plan.n,
        pass_threshold=plan.pass_threshold,
        total_work_items=len(items),
    )
    succeeded = sum(1 for r in results if r.status == "success")
    failed = sum(1 for r in results if r.status == "failed")
    skipped = sum(1 for r in results if r.status == "skipped")
    pending = len(items) - len(results)
    if interrupted:
        status = "interrupted"
    elif failed or pending:
        status = "partial"
    else:
        status = "success"
    completed_at = datetime.now(UTC)
    duration_ms = (time.perf_counter() - t0) * 1000
    write_index(paths, index_lines)
    write_json_atomic(
        paths.metrics,
        {
            "eval_run": {
                "id": manifest["local_run_id"],
                "status": status,
                "name": plan.run_name,
                "dataset_name": plan.dataset_path.name,
                "model_name": plan.upstream.model,
                "rollout_name": plan.config.rollout,
                "duration_ms": round(duration_ms, 1),
                "started_at": started_at.isoformat(),
                "completed_at": completed_at.isoformat(),
                "pending": pending,
            },
            "summary": summary,
        },
    )
    return EvalRunResult(
        status=status,
        run_name=plan.run_name,
        local_run_id=manifest["local_run_id"],
        output_path=str(paths.root),
        dataset_source=str(plan.dataset_path),
        model=plan.upstream.model,
        rollout_name=plan.config.rollout,
        total_work_items=len(items),
        dispatched=dispatched,
        succeeded=succeeded,
        failed=failed,
        skipped=skipped,
        resumed=resumed,
        pending=pending,
        duration_ms=duration_ms,
        metrics=summary,
        failed_rows=failed_rows,
        archived_to=str(archived) if archived is not None else None,
        halt_reason=halt_reason,
    )


def write_index(paths: RunPaths, lines: list[dict[str, Any]]) -> None:
    import json

    tmp = paths.index.with_name(".index.jsonl.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line, allow_nan=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(paths.index)
