"""Drive work items through the rollout server and classify every outcome.

A *work item* is one dataset row x one sample index. For each, the scheduler mints a fresh
rollout id, opens a proxy route with its own token, admits the rollout with ``RolloutClient``
(which backs off on 429 and keeps the lease alive with long polls), waits for the result up to
the per-item deadline, and journals the classified outcome before counting it.

Why outcomes are classified here and not by reward: a result is only ``success`` when the
rollout succeeded *and* was graded. A failure keeps its category (``timeout``, ``http_error``,
``agent_error``, ...) and is never turned into reward 0 (see :mod:`.metrics`). Problems that
are not about one item (the server died or stopped answering) *halt* dispatch instead: the
remaining and in-flight items stay pending, so a rerun picks them up. A run that is clearly
broken halts the same way: ``max_failures`` failed items in this session (``--max-failures``),
or ``max_consecutive_infra`` failed items in a row whose model calls failed at the model
endpoint (unreachable, 408/429/5xx after retries, 401/403), by default
:data:`DEFAULT_MAX_CONSECUTIVE_INFRA_FAILURES`.

Error messages name the model endpoint the user gave, never the proxy's internal route: a
rollout's exception text that quotes its ``chat_completions_url`` is rewritten by
:meth:`PolicyProxy.public_text`.

Interrupts (Ctrl-C, SIGTERM) cancel in-flight rollouts on the server and record nothing for
them, which leaves them pending for the next run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from osmosis_ai.errors import EvalError
from osmosis_ai.eval._impl.cost.budget import MAX_PROBE_ROWS, Budget, CostEstimate
from osmosis_ai.eval._impl.plan.dataset import DatasetRow
from osmosis_ai.eval._impl.plan.plan import DEFAULT_ITEM_DEADLINE_SEC
from osmosis_ai.eval._impl.proxy.calls import CallSummary, PolicyRoutes, ProxyGone
from osmosis_ai.eval._impl.results.reproducibility import HARBOR_SAMPLE_KEY, harbor_task_of
from osmosis_ai.eval._impl.run_dir.journal import Journal
from osmosis_ai.judge_usage import judge_usage_from_metrics

if TYPE_CHECKING:
    from osmosis_ai.rollout.client import RolloutClient
    from osmosis_ai.rollout.types import RolloutResultResponse

#: Failed work items in a row, each with a model-endpoint failure, that halt dispatch.
DEFAULT_MAX_CONSECUTIVE_INFRA_FAILURES = 5


@dataclass(frozen=True, slots=True)
class WorkItem:
    row_index: int  # position in the selection
    run_index: int  # sample index, 0..n-1
    row: DatasetRow


class DispatchHalted(EvalError):
    """A process-wide fault stopped dispatch; pending items were left for a rerun."""


@dataclass(slots=True)
class Scheduler:
    """Runs work items with at most ``max_in_flight`` rollouts admitted at once, all through
    ``client`` (its lean transport's cost per request does not grow with the polls open)."""

    client: RolloutClient
    proxy: PolicyRoutes
    journal: Journal
    max_in_flight: int
    attempt_tag: str
    agent_timeout_sec: float | None = None
    grader_timeout_sec: float | None = None
    deadline_sec: float = DEFAULT_ITEM_DEADLINE_SEC
    on_result: Callable[[dict[str, Any]], None] = lambda record: None
    on_event: Callable[[str, str, dict[str, Any]], None] = lambda level, message, details: None
    server_alive: Callable[[], bool] = lambda: True
    #: Applied to error messages before they are journaled (a rollout's exception text may
    #: quote a secret from its environment).
    redact: Callable[[str], str] = lambda text: text
    #: Builds a row's ``cost`` object from its policy calls' usage and its judge usage.
    price_row: (
        Callable[[list[dict[str, Any] | None], dict[str, Any] | None], dict[str, Any]] | None
    ) = None
    #: Halt once this many work items failed in this session (``None``: never).
    max_failures: int | None = None
    #: Halt after this many failed items in a row whose model calls failed upstream.
    max_consecutive_infra: int = DEFAULT_MAX_CONSECUTIVE_INFRA_FAILURES
    #: The rollout code's source digest, journaled with each record (``--allow-changed``).
    code_digest: str | None = None
    #: The run's cost ledger (``--max-cost``, or a cost estimate to confirm); see :mod:`osmosis_ai.eval._impl.cost.budget`.
    budget: Budget | None = None
    #: Asked with the estimate after the probe; ``False`` stops dispatch (``stop_code="declined"``).
    confirm: Callable[[CostEstimate], Awaitable[bool]] | None = None
    halt_reason: str | None = None
    #: Why dispatch stopped early: ``"budget"``, ``"declined"``, ``"max_failures"`` or
    #: ``"endpoint_failures"`` (the last two with a ``halt_reason``).
    stop_code: str | None = None
    dispatched: int = 0
    failures: int = 0
    consecutive_infra: int = 0
    _in_flight: dict[str, WorkItem] = field(default_factory=dict)

    async def run(self, items: Iterable[WorkItem]) -> None:
        """Process every item (or until halted/cancelled)."""
        pending = list(items)
        iterator = iter(pending)
        if self.budget is not None:
            await self._estimate(iterator, len(pending))
        workers = [
            asyncio.create_task(self._worker(iterator)) for _ in range(max(1, self.max_in_flight))
        ]
        try:
            await asyncio.gather(*workers)
        except BaseException:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        if self.stop_code == "budget" and self.budget is not None:
            self.halt_reason = (
                self.budget.stop_message()
            )  # the final spend, in-flight rows included
        if self.halt_reason is not None:
            raise DispatchHalted(self.halt_reason)

    async def _worker(self, items: Iterator[WorkItem]) -> None:
        for item in items:
            if self.halt_reason is not None:
                return
            if self.budget is not None and not self.budget.admit():
                self._stop_for_budget(self.budget)
                return
            await self._run_item(item)

    async def _estimate(self, items: Iterator[WorkItem], pending: int) -> None:
        """Probe rows one at a time until one spent something, then estimate and confirm."""
        budget = self.budget
        assert budget is not None
        probes = 0
        while (
            budget.per_row_usd is None
            and budget.unknown_reason is None
            and probes < MAX_PROBE_ROWS
            and self.halt_reason is None
        ):
            item = next(items, None)
            if item is None:
                return
            budget.in_flight += 1
            probes += 1
            await self._run_item(item)
        if self.halt_reason is not None:
            return
        estimate = budget.make_estimate(pending - probes, probes)
        self.on_event("info", estimate.describe(), {"code": "COST_ESTIMATE", **estimate.to_json()})
        if budget.limit_usd is not None and budget.unknown_reason is not None:
            self._stop_for_budget(budget)
        elif (
            self.confirm is not None
            and estimate.total_usd is not None
            and estimate.pending
            and not await self.confirm(estimate)
        ):
            self.stop_code = "declined"
            self.halt_reason = f"not confirmed at the {estimate.describe()}"

    def _stop_for_budget(self, budget: Budget) -> None:
        if self.halt_reason is None:
            self.stop_code = "budget"
            self.halt_reason = budget.stop_message()  # recomputed with the final spend at the end
            self.on_event("warning", "--max-cost:", {"reason": budget.admission_stop_message()})

    def _halt(self, reason: str) -> None:
        if self.halt_reason is None:
            self.halt_reason = reason
            self.on_event("error", "dispatch halted", {"reason": reason})

    async def _run_item(self, item: WorkItem) -> None:
        from osmosis_ai.rollout.client import RolloutProtocolError

        client = self.client
        rollout_id = _uuid4_hex()
        url, token = self.proxy.register(rollout_id)
        self._in_flight[rollout_id] = item
        started = time.perf_counter()
        record: dict[str, Any] | None = None
        judge: dict[str, float] | None = None
        handle: Any = None
        self.dispatched += 1
        try:
            handle = await client.run_rollout_async(
                initial_messages=item.row.initial_messages,
                chat_completions_url=url,
                rollout_id=rollout_id,
                llm_api_key=token,
                label=item.row.label,
                metadata=item.row.metadata,
                grade=True,
                agent_timeout_sec=self.agent_timeout_sec,
                grader_timeout_sec=self.grader_timeout_sec,
                extra_fields={
                    "row_index": item.row_index,
                    "run_index": item.run_index,
                    "source_row_index": item.row.source_index,
                },
            )
            try:
                result = await asyncio.wait_for(handle.wait_for_completion(), self.deadline_sec)
            except TimeoutError:
                record = await self._deadline_passed(client, item, rollout_id, started, handle)
            else:
                record = self._classify(item, rollout_id, started, result)
                harbor = harbor_task_of(result.sample.extra_fields if result.sample else None)
                if record is not None and harbor is not None:
                    record[HARBOR_SAMPLE_KEY] = harbor  # the reproducibility record's source
                # LLM-judge usage of the grader, reported apart from the policy's tokens.
                judge = judge_usage_from_metrics(result.sample.metrics if result.sample else None)
        except asyncio.CancelledError:
            await self._cancel_on_server(client, rollout_id, handle)
            raise
        except RolloutProtocolError as exc:
            status = getattr(exc, "status_code", None)
            if isinstance(status, int) and 400 <= status < 500 and status not in (401, 403):
                record = self._record(
                    item,
                    rollout_id,
                    started,
                    "failed",
                    error_type="rollout_protocol_error",
                    error_message=str(exc),
                )
            else:
                self._halt(f"the rollout server answered unexpectedly: {exc}")
        except (httpx.TransportError, OSError) as exc:
            if await self._server_exits_soon():
                self._halt("the rollout server exited")
            else:
                self._halt(f"cannot reach the rollout server: {type(exc).__name__}: {exc}")
        except Exception as exc:  # admission timeout and anything the client did not expect
            self._halt(f"{type(exc).__name__}: {exc}")
        finally:
            self._in_flight.pop(rollout_id, None)
            if record is None:
                self.proxy.discard(rollout_id)
        if record is None:
            return  # left pending (halted)
        await self._finish(record, rollout_id, judge)

    async def _finish(
        self, record: dict[str, Any], rollout_id: str, judge: dict[str, float] | None
    ) -> None:
        """Close the proxy route; add the judge usage, the policy calls' tokens, safety check
        and cost; journal it. A proxy process that died leaves the row pending (its calls are
        unknown) and halts."""
        try:
            calls = await self.proxy.finish(rollout_id)
        except ProxyGone as exc:
            self._halt(str(exc))
            return
        except asyncio.CancelledError:
            self.proxy.discard(rollout_id)
            raise
        if judge:
            record["judge"] = judge
        if calls.count:
            record["tokens"] = calls.tokens
            record["policy_calls"] = calls.count
            record["training_safety"] = calls.training_safety
        if self.price_row is not None and (calls.count or judge):
            record["cost"] = self.price_row(calls.usages, judge)
        if self.budget is not None:
            self.budget.settle(record.get("cost"))
        await self.journal.append(record)
        self.on_result(record)
        self._count_failure(record, calls)

    def _count_failure(self, record: dict[str, Any], calls: CallSummary) -> None:
        """Halt a clearly broken run (see the module docstring)."""
        if record["status"] != "failed":
            self.consecutive_infra = 0
            return
        self.failures += 1
        self.consecutive_infra = self.consecutive_infra + 1 if calls.endpoint_error else 0
        if self.max_failures is not None and self.failures >= self.max_failures:
            self.stop_code = self.stop_code or "max_failures"
            self._halt(
                f"{self.failures} work item(s) failed in this session (--max-failures "
                f"{self.max_failures}); the last: {_excerpt(record)}"
            )
        elif self.consecutive_infra >= self.max_consecutive_infra:
            self.stop_code = self.stop_code or "endpoint_failures"
            self._halt(
                f"{self.consecutive_infra} work items in a row failed because the model endpoint "
                f"{self.proxy.upstream.display_url} failed ({calls.endpoint_error}); fix the model "
                "endpoint, then rerun to resume"
            )

    async def _server_exits_soon(self, grace_sec: float = 2.0) -> bool:
        """Whether the server process is gone, or goes within ``grace_sec``.

        A dying server closes its connections before its exit can be observed, so a transport
        error seen a moment before the exit would otherwise be reported as "cannot reach" instead
        of the crash (whose output the session then shows).
        """
        deadline = time.monotonic() + grace_sec
        while self.server_alive():
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.05)
        return True

    def _classify(
        self, item: WorkItem, rollout_id: str, started: float, result: RolloutResultResponse
    ) -> dict[str, Any] | None:
        status = str(result.status)

        def failed(error_type: str, message: str | None) -> dict[str, Any]:
            return self._record(
                item, rollout_id, started, "failed", error_type=error_type, error_message=message
            )

        if status == "success":
            sample = result.sample
            if sample is None:
                return failed("missing_sample", "the rollout succeeded but returned no sample")
            if sample.remove_sample:
                return self._record(item, rollout_id, started, "skipped")
            if sample.reward is None:
                return failed(
                    "not_graded",
                    "the rollout succeeded but no reward was set (does the grader call ctx.set_reward?)",
                )
            return self._record(item, rollout_id, started, "success", reward=float(sample.reward))
        if status == "failure":
            category = result.err_category.value if result.err_category is not None else None
            if category is None and result.err_message is None and result.sample is None:
                return failed(
                    "not_graded",
                    "grading could not run: the rollout has no grader, or the row has neither label nor metadata",
                )
            return failed(category or "rollout_failed", result.err_message)
        # cancelled (server shutting down, or someone cancelled it): not a result; stays pending
        self._halt(f"rollout {rollout_id} was cancelled by the rollout server")
        return None

    def _record(
        self,
        item: WorkItem,
        rollout_id: str,
        started: float,
        status: str,
        *,
        reward: float | None = None,
        error_type: str | None = None,
        error_message: str | None = None,
    ) -> dict[str, Any]:
        record: dict[str, Any] = {
            "row_index": item.row_index,
            "run_index": item.run_index,
            "source_row_index": item.row.source_index,
            "rollout_id": rollout_id,
            "status": status,
            "reward": reward,
            "tokens": 0,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            "error_type": error_type,
            "attempt": self.attempt_tag,
        }
        if self.code_digest is not None:
            record["code_digest"] = self.code_digest
        if error_message:
            public = self.proxy.public_text(error_message, rollout_id)
            record["error_message"] = self.redact(public)[:2000]
        return record

    async def _deadline_passed(
        self, client: RolloutClient, item: WorkItem, rollout_id: str, started: float, handle: Any
    ) -> dict[str, Any]:
        """The row's record when its deadline passed: its rollout cancelled on the server (a
        fleet is told first: it fails a server that admits rollouts and never finishes them)."""
        timed_out = getattr(client, "rollout_timed_out", None)
        if timed_out is not None:
            timed_out(rollout_id, self.deadline_sec)
        await self._cancel_on_server(client, rollout_id, handle)
        return self._record(
            item,
            rollout_id,
            started,
            "failed",
            error_type="timeout",
            error_message=f"no result within the per-item deadline of {self.deadline_sec:.0f}s",
        )

    async def _cancel_on_server(self, client: RolloutClient, rollout_id: str, handle: Any) -> None:
        """Best effort: stop the rollout on the server and our local poller."""
        if handle is not None:
            with contextlib.suppress(Exception):
                handle.cancel()
        with contextlib.suppress(Exception):
            await asyncio.shield(client.cancel_rollout(rollout_id))

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)


def _excerpt(record: dict[str, Any]) -> str:
    text = str(record.get("error_message") or record.get("error_type"))
    return text if len(text) <= 200 else text[:199] + "…"


def _uuid4_hex() -> str:
    """``uuid.uuid4().hex``: the same random version-4 id, without ``UUID``'s constructor
    (its checks cost a few microseconds per row on the controller's loop)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    return raw.hex()
