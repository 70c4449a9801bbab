"""The cost ledger end to end: a scripted policy reporting usage, a real rollout child process."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from osmosis_ai.eval._impl.plan.plan import EvalOptions, RunTuning, build_plan
from osmosis_ai.eval._impl.proxy.calls import RetryPolicy
from osmosis_ai.eval._impl.session import run_session
from osmosis_ai.testing import ScriptedPolicyServer
from osmosis_ai.testing.responders import multiply_solver

USAGE = {
    "prompt_tokens": 1000,
    "completion_tokens": 100,
    "prompt_tokens_details": {"cached_tokens": 400},
    "completion_tokens_details": {"reasoning_tokens": 50},
}
#: 600 input x $1 + 400 cached x $0.5 + 100 output x $2, per million tokens.
CALL_USD = (600 * 1.0 + 400 * 0.5 + 100 * 2.0) / 1e6


def _with_usage(body: Mapping[str, Any]) -> Any:
    return dataclasses.replace(multiply_solver(body), usage=USAGE)


def _plan(config: Path, url: str) -> Any:
    return build_plan(
        config,
        EvalOptions(name="t", model="m", base_url=url),
        tuning=RunTuning(retry_policy=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02)),
    )


async def test_rows_and_run_carry_policy_cost_from_the_pricing_override(
    workspace: Callable[..., Path],
) -> None:
    config = workspace(n_rows=2)
    with config.open("a") as fh:
        fh.write('\n[pricing."m"]\ninput = 1.0\noutput = 2.0\ncached_input = 0.5\n')
    async with ScriptedPolicyServer(_with_usage) as policy:
        result = await run_session(_plan(config, policy.url))
    assert result.succeeded == 2
    for row in result.rows:
        assert row.cost is not None
        assert row.policy_calls == 2
        assert row.cost["policy_usd"] == pytest.approx(2 * CALL_USD)
        assert row.cost["judge_usd"] == 0.0  # no judge in this rollout
        assert row.cost["tokens"] == {
            "input": 1200,
            "cached_input": 800,
            "output": 200,
            "reasoning": 100,
        }
    summary = json.loads((result.run_dir / "metrics.json").read_text())["summary"]
    assert summary["cost"]["total_usd"] == pytest.approx(4 * CALL_USD)
    assert summary["cost"]["tokens"]["reasoning"] == 200
    index = [json.loads(line) for line in (result.run_dir / "index.jsonl").read_text().splitlines()]
    assert all(line["cost"]["policy_usd"] == pytest.approx(2 * CALL_USD) for line in index)


async def test_a_local_model_without_override_costs_unknown_not_zero(
    workspace: Callable[..., Path],
) -> None:
    config = workspace(n_rows=1)
    async with ScriptedPolicyServer(_with_usage) as policy:
        result = await run_session(_plan(config, policy.url))
    cost = result.metrics["cost"]
    assert cost["policy_usd"] is None
    assert cost["total_usd"] is None
    assert cost["unpriced_rows"] == 1
    assert "[pricing" in cost["unknown_reason"]
    assert result.rows[0].cost is not None
    assert result.rows[0].cost["policy_usd"] is None
