"""Adaptive concurrency end to end: an upstream that refuses above 8 concurrent requests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from osmosis_ai.eval._impl.plan.plan import EvalOptions, RunTuning, build_plan
from osmosis_ai.eval._impl.proxy.calls import RetryPolicy
from osmosis_ai.eval._impl.session import run_session
from osmosis_ai.testing import ScriptedPolicyServer, error_reply
from osmosis_ai.testing.responders import multiply_solver

CAP = 8


class CappedUpstream:
    """Answers 429 (``Retry-After: 0.02``) to a request arriving while ``CAP`` are in service."""

    def __init__(self, service_sec: float) -> None:
        self.service_sec = service_sec
        self.active = 0
        self.peak = 0
        self.refused = 0
        self.served = 0

    async def __call__(self, body: Mapping[str, Any]) -> Any:
        if self.active >= CAP:
            self.refused += 1
            return error_reply(429, {"error": "too many"}, headers={"Retry-After": "0.02"})
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            await asyncio.sleep(self.service_sec)  # the model's service time
        finally:
            self.active -= 1
        self.served += 1
        return multiply_solver(dict(body))


async def test_a_capped_upstream_settles_near_its_cap_with_no_failed_rows(
    workspace: Callable[..., Path],
) -> None:
    config = workspace(n_rows=240, mode="one-call", env={"TINY_CONCURRENCY": "32"})
    upstream = CappedUpstream(service_sec=0.05)
    async with ScriptedPolicyServer(upstream) as policy:
        plan = build_plan(
            config,
            EvalOptions(name="capped", model="m", base_url=policy.url, max_in_flight=32, workers=1),
            tuning=RunTuning(
                retry_policy=RetryPolicy(max_attempts=8, base_delay=0.01, max_delay=0.05)
            ),
        )
        result = await run_session(plan)
    print("trace [s, calls in flight, limit]:", result.metrics["concurrency"]["policy"]["trace"])
    assert result.failed == 0
    assert result.succeeded == 240
    assert upstream.refused > 0  # the cap was hit: the limit had something to adapt to
    policy_limit = json.loads((result.run_dir / "metrics.json").read_text())["summary"][
        "concurrency"
    ]["policy"]
    assert policy_limit["ceiling"] == 32
    assert policy_limit["decreases"] >= 4  # 32 -> 24 -> 18 -> 13.5 -> 10.1 -> ~7.6
    assert policy_limit["peak_in_flight"] <= 32
    trace = policy_limit["trace"]  # [seconds, policy calls in flight, limit]
    # Settled: from the first point where the limit came down to the cap's neighbourhood.
    start = next(i for i, point in enumerate(trace) if point[2] < 10)
    settled = trace[start:]
    assert len(settled) >= 10, trace
    limits = [point[2] for point in settled]
    in_flight = [point[1] for point in settled if point[1] > 0]
    assert max(limits) <= 12, limits  # never grew back far past the cap
    assert 6.5 <= sum(limits) / len(limits) <= 10, limits
    # Not a lower bound on calls in flight: on a loaded machine the rows themselves may not keep
    # 8 calls going, and a limit the callers do not fill stays where it is (it neither grows nor
    # holds anything back).
    assert sum(in_flight) / len(in_flight) <= 9, in_flight
    assert max(in_flight) <= 12, in_flight
