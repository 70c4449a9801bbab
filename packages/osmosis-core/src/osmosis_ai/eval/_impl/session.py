"""One session of a run: what :func:`~osmosis_ai.eval.run_eval_async` does once the plan is built.

Sequence: lock the run name → (``fresh``: archive) → check or write the manifest → read the
journal to find pending work items → dispatch them (:mod:`osmosis_ai.eval._impl.dispatch`: server child, upstream,
proxy, scheduler) → finalize (:mod:`osmosis_ai.eval._impl.finalize`: per-row records, ``index.jsonl``, trajectories,
``metrics.json``).

Why the session ends the same way on every path (done, partial, halted, interrupted): the
results on disk must always describe the journal, and the child server must always be gone.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from osmosis_ai._util.redaction import redact_files_under, register_secret, url_secrets
from osmosis_ai.eval._impl.adaptive import AdaptiveLimit
from osmosis_ai.eval._impl.cost.budget import Budget, CostEstimate
from osmosis_ai.eval._impl.dispatch import DispatchJob, dispatch
from osmosis_ai.eval._impl.errors import (
    EvalDiskFullError,
    EvalRunFailed,
    UpstreamRejected,
    is_disk_full,
)
from osmosis_ai.eval._impl.finalize import SessionEnd, finalize, plan_redactor, row_from_journal
from osmosis_ai.eval._impl.fleet_dispatch import dispatch_fleet
from osmosis_ai.eval._impl.local_server.process import RolloutServerError
from osmosis_ai.eval._impl.plan.dataset import missing_label_warning
from osmosis_ai.eval._impl.plan.plan import EvalPlan
from osmosis_ai.eval._impl.progress import EvalProgress, EvalUpdate, ProgressCallback
from osmosis_ai.eval._impl.results.reproducibility import run_record
from osmosis_ai.eval._impl.results.run import EvalRun
from osmosis_ai.eval._impl.run_dir.code_revisions import adopt_changed_code, record_work_items
from osmosis_ai.eval._impl.run_dir.journal import append_offset, count_unreadable, load_latest
from osmosis_ai.eval._impl.run_dir.layout import RunLock, RunPaths, archive_run
from osmosis_ai.eval._impl.run_dir.log import RunLog
from osmosis_ai.eval._impl.run_dir.manifest import check_manifest, read_manifest, write_manifest
from osmosis_ai.eval._impl.scheduler import WorkItem

#: Asked with the cost estimate before dispatch; ``False`` leaves the run pending.
ConfirmCost = Callable[[CostEstimate], bool | Awaitable[bool]]


async def run_session(
    plan: EvalPlan, progress: ProgressCallback | None = None, confirm: ConfirmCost | None = None
) -> EvalRun:
    """Run (or resume) the plan's run; see the module docstring."""
    end = SessionEnd(started_at=datetime.now(UTC), t0=time.perf_counter())
    paths = RunPaths(plan.run_dir)
    plan.output_root.mkdir(parents=True, exist_ok=True)
    lock = RunLock(plan.output_root, plan.run_name)
    lock.acquire()
    try:
        end.archived = archive_run(paths.root) if plan.options.fresh else None
        manifest, code_change = _open_manifest(plan, paths)
        redactor = plan_redactor(plan)
        redact_files_under(paths.root, redactor)  # every file written under the run
        register_secret(
            *url_secrets(plan.upstream.base_url), plan.upstream.api_key, *plan.secrets.values()
        )
        log = RunLog(paths.logs, redactor)
        try:
            session = _Session(plan, paths, manifest, log, progress, confirm)
            session.code_change = code_change
            return await session.run(end)
        finally:
            log.close()
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        path = Path(exc.filename) if exc.filename else paths.root
        raise EvalDiskFullError(path, plan.run_name, paths.root) from exc
    finally:
        lock.release()


def _open_manifest(
    plan: EvalPlan, paths: RunPaths
) -> tuple[dict[str, Any], tuple[str, str] | None]:
    """The run's manifest (checked, or created) and ``(old, new)`` code digests when
    ``--allow-changed`` accepted changed rollout code."""
    manifest = read_manifest(paths.manifest)
    if manifest is not None and plan.options.allow_changed:
        change = adopt_changed_code(manifest, paths.manifest, plan.run_name, plan.inputs)
        paths.create()
        return manifest, change
    if manifest is not None:
        check_manifest(manifest, plan.run_name, plan.inputs)
    paths.create()
    if manifest is not None:
        return manifest, None
    return write_manifest(
        paths.manifest,
        plan.run_name,
        plan.inputs,
        {
            "config_path": str(plan.config_path) if plan.config_path else None,
            "dataset_path": str(plan.dataset_path),
            "rollout_dir": str(plan.rollout_dir),
            "upstream_base_url": plan.upstream.display_url or None,
            "request": plan.request,
        },
        run_record(plan),
    ), None


def _work_items(plan: EvalPlan) -> list[WorkItem]:
    return [
        WorkItem(row_index=row_index, run_index=run_index, row=row)
        for row_index, row in enumerate(plan.rows)
        for run_index in range(plan.knobs.n)
    ]


def _is_done(record: dict[str, Any], retry_failed: bool) -> bool:
    status = record.get("status")
    if retry_failed:
        return status == "success"
    return status in ("success", "failed", "skipped")


class _Session:
    """The steps of one session, sharing the plan, paths, log and progress counters."""

    def __init__(
        self,
        plan: EvalPlan,
        paths: RunPaths,
        manifest: dict[str, Any],
        log: RunLog,
        callback: ProgressCallback | None,
        confirm: ConfirmCost | None = None,
    ) -> None:
        self.plan = plan
        self.confirm = confirm
        self.budget: Budget | None = None
        #: Policy calls in flight (in the proxy), adapted to the upstream's pushback; its ceiling
        #: (max_in_flight) is set by dispatch.
        self.limit = AdaptiveLimit(plan.knobs.max_in_flight or 1, name="policy")
        self.paths = paths
        self.manifest = manifest
        self.log = log
        self.callback = callback
        #: ``(old, new)`` source digests when --allow-changed accepted changed code.
        self.code_change: tuple[str, str] | None = None
        self.items = _work_items(plan)
        self.by_key = {(i.row_index, i.run_index): i for i in self.items}
        self.progress = EvalProgress(
            run_name=plan.run_name,
            model=plan.upstream.model,
            rollout=plan.rollout_name,
            rows=len(plan.rows),
            n=plan.knobs.n,
            total=len(self.items),
        )
        self.progress.policy_limit = None if plan.servers else self.limit

    async def run(self, end: SessionEnd) -> EvalRun:
        pending = self._plan_pending()
        fatal: BaseException | None = None
        if pending:
            fatal = await self._dispatch(pending, end)
        if self.manifest.get("code_revisions"):
            latest = load_latest(self.paths.journal)
            record_work_items(self.manifest, self.paths.manifest, latest)
        result = finalize(self.plan, self.paths, self.manifest, self.items, end)
        self.log.info(
            "finish",
            "session finished",
            status=result.status,
            succeeded=result.succeeded,
            failed=result.failed,
            skipped=result.skipped,
            pending=result.pending,
        )
        if isinstance(fatal, UpstreamRejected):
            raise fatal  # after finalize: the run reads as partial, with the reason
        if fatal is not None and result.dispatched == 0:
            raise EvalRunFailed(str(fatal), result) from fatal
        return result

    def _plan_pending(self) -> list[WorkItem]:
        prior = load_latest(self.paths.journal)
        retry = self.plan.options.retry_failed
        pending = [
            i for i in self.items if not _is_done(prior.get((i.row_index, i.run_index), {}), retry)
        ]
        if self.plan.knobs.max_cost is not None or self.confirm is not None:
            # The budget covers the whole run: rows of earlier sessions count.
            keys = {(i.row_index, i.run_index) for i in self.items} - {
                (i.row_index, i.run_index) for i in pending
            }
            self.budget = Budget.from_prior(
                self.plan.knobs.max_cost, (prior[key].get("cost") for key in keys if key in prior)
            )
        self.progress.already_done = len(self.items) - len(pending)
        self.progress.pending_at_start = len(pending)
        self.progress.resumed = bool(prior)
        plan = self.plan
        self.log.info(
            "plan",
            "session starting",
            run=plan.run_name,
            total=len(self.items),
            pending=len(pending),
            model=plan.upstream.model,
            rollout=plan.rollout_name,
            dataset=str(plan.dataset_path),
            retry_failed=retry,
        )
        unreadable = count_unreadable(self.paths.journal) if prior or pending else 0
        if unreadable:
            self._notice(
                "warning",
                f"skipped {unreadable} unreadable line(s) in {self.paths.journal} (not JSON "
                "records: a NUL block or invalid UTF-8); the work items they held run again.",
                {"code": "JOURNAL_LINES_SKIPPED", "lines": unreadable},
            )
        if plan.upstream.is_mock:
            script = plan.upstream.mock_script
            policy = f"the reply script {script}" if script else "the built-in scripted policy"
            self._notice(
                "warning",
                f"--model mock uses {policy}: a plumbing check, its rewards say nothing about "
                "any model.",
                {"code": "MOCK_MODEL"},
            )
        if plan.upstream.is_local:
            self._notice(
                "warning",
                "--model local runs SmolLM2-135M-Instruct on llama.cpp's server on this machine: "
                "a real model, so the rollout meets a real server's schemas and prose answers, "
                "but a tiny one; its rewards say little about the model you will train.",
                {"code": "LOCAL_MODEL"},
            )
        if self.code_change is not None:
            old, new = self.code_change
            self._notice(
                "warning",
                f"the rollout's code changed since this run started ({old[:12]} -> {new[:12]}); "
                f"{len(pending)} work item(s) run on the new code, "
                f"{self.progress.already_done} keep their results from earlier code (recorded "
                "in manifest.json, code_revisions)",
                {"code": "CODE_CHANGED", "from": old, "to": new},
            )
        no_label = missing_label_warning(plan.dataset_path, plan.rows)
        if no_label is not None:
            self._notice("warning", no_label, {"code": "NO_LABEL"})
        self._emit(EvalUpdate("started", self.progress))
        return pending

    async def _dispatch(self, pending: list[WorkItem], end: SessionEnd) -> BaseException | None:
        def on_record(record: dict[str, Any]) -> None:
            end.recorded += 1
            self._on_record(record)

        # Every record from here on is this session's (nothing else appends: the run is locked).
        end.journal_start = append_offset(self.paths.journal)

        job = DispatchJob(self.plan, self.paths, pending, self.log, self._notice, on_record)
        try:
            if self.plan.servers:
                outcome = await dispatch_fleet(job)
            else:
                outcome = await dispatch(
                    job,
                    self.budget,
                    self._confirm if self.confirm is not None else None,
                    self.limit,
                )
        except asyncio.CancelledError:
            end.interrupted = True
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            self.log.warning("run", "interrupted; in-flight work items stay pending")
        except RolloutServerError as exc:
            end.halt_reason = str(exc)
            self.log.error("server", "rollout server failed", error=str(exc))
            return exc
        except UpstreamRejected as exc:  # the preflight: nothing was dispatched
            end.halt_reason = str(exc)
            return exc
        else:
            end.dispatched, end.halt_reason = outcome.dispatched, outcome.halt_reason
            end.servers = outcome.servers
            end.stop_code = outcome.stop_code
        finally:
            end.budget = self.budget
            if not self.plan.servers:  # --servers: the fleet's own slots, no adaptive limit yet
                end.concurrency = {"policy": self.limit.summary()}
        return None

    async def _confirm(self, estimate: CostEstimate) -> bool:
        """The caller's confirmation, off the event loop (a prompt blocks)."""
        assert self.confirm is not None
        answer = await asyncio.to_thread(self.confirm, estimate)
        if not isinstance(answer, bool):
            answer = await answer
        self.log.info("budget", "cost estimate confirmed" if answer else "cost estimate declined")
        return answer

    def _on_record(self, record: dict[str, Any]) -> None:
        item = self.by_key[(record["row_index"], record["run_index"])]
        row = row_from_journal(item, record, resumed=False, trajectory=None)
        self.progress.count(row)
        if row.status == "failed":
            self.log.warning(
                "result",
                "work item failed",
                row_index=row.row_index,
                run_index=row.run_index,
                rollout_id=row.rollout_id,
                error_type=row.error_type,
                error_message=row.error_message,
            )
        self._emit(EvalUpdate("row", self.progress, row=row))

    def _notice(self, level: str, message: str, details: dict[str, Any]) -> None:
        self.log.log(level, "run", message, **details)
        self._emit(
            EvalUpdate("notice", self.progress, level=level, message=message, details=details)
        )

    def _emit(self, update: EvalUpdate) -> None:
        if self.callback is not None:
            self.callback(update)
