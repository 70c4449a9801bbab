"""``max_cost`` end to end: a scripted policy reporting usage, a real rollout child process."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from osmosis_ai.eval._impl.cost.budget import CostEstimate
from osmosis_ai.eval._impl.plan.plan import EvalOptions, EvalPlanError, RunTuning, build_plan
from osmosis_ai.eval._impl.proxy.calls import RetryPolicy
from osmosis_ai.eval._impl.session import run_session
from osmosis_ai.testing import ScriptedPolicyServer
from osmosis_ai.testing.responders import multiply_solver

USAGE = {"prompt_tokens": 1000, "completion_tokens": 500}
#: 1000 input x $1 + 500 output x $2 per million tokens, two policy calls per row.
ROW_USD = 2 * (1000 * 1.0 + 500 * 2.0) / 1e6


def _with_usage(body: Mapping[str, Any]) -> Any:
    return dataclasses.replace(multiply_solver(body), usage=USAGE)


def _config(workspace: Callable[..., Path], n_rows: int, evaluation: str = "") -> Path:
    config = workspace(n_rows=n_rows, evaluation=evaluation)
    with config.open("a") as fh:
        fh.write('\n[pricing."m"]\ninput = 1.0\noutput = 2.0\n')
    return config


def _plan(config: Path, url: str, max_cost: float | None, max_in_flight: int = 3) -> Any:
    return build_plan(
        config,
        EvalOptions(
            name="budget",
            model="m",
            base_url=url,
            max_cost=max_cost,
            max_in_flight=max_in_flight,
            workers=1,
        ),
        tuning=RunTuning(retry_policy=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02)),
    )


async def test_the_run_stops_within_one_row_of_the_budget_and_resumes(
    workspace: Callable[..., Path],
) -> None:
    config = _config(workspace, n_rows=12)
    budget = 4.5 * ROW_USD
    async with ScriptedPolicyServer(_with_usage) as policy:
        notices: list[Any] = []
        stopped = await run_session(
            _plan(config, policy.url, budget),
            progress=lambda update: notices.append(update) if update.kind == "notice" else None,
        )
        # The warning when admission stops says what it is (no new row starts, rows still
        # running finish), once, not "budget reached" while the run goes on spending.
        (warning,) = [n for n in notices if n.level == "warning" and n.message == "--max-cost:"]
        said = f"{warning.message} {warning.details['reason']}"
        assert said.startswith("--max-cost: no new row starts: $")
        assert "reached" not in said
        assert said.count("--max-cost") == 1
        assert stopped.stop_code == "budget"
        assert stopped.status == "partial"
        assert stopped.halt_reason is not None
        assert "cost budget reached" in stopped.halt_reason
        spent = stopped.metrics["cost"]["total_usd"]
        assert budget - ROW_USD <= spent <= budget
        assert stopped.succeeded == 4
        assert stopped.pending == 8
        block = json.loads((stopped.run_dir / "metrics.json").read_text())["summary"]["budget"]
        assert block["stopped"] is True
        assert block["max_cost_usd"] == budget
        assert block["spent_usd"] == pytest.approx(spent)
        assert block["estimate"]["per_row_usd"] == pytest.approx(ROW_USD)
        assert block["estimate"]["total_usd"] == pytest.approx(11 * ROW_USD)  # after the probe
        assert stopped.stop_code == "budget"

        # Same budget again: the run's ledger already holds it, nothing new starts.
        again = await run_session(_plan(config, policy.url, budget))
        assert again.stop_code == "budget"
        assert again.dispatched == 0
        assert again.pending == 8

        resumed = await run_session(_plan(config, policy.url, 20 * ROW_USD))
    assert resumed.status == "success"
    assert resumed.stop_code is None
    assert resumed.succeeded == 12
    assert resumed.resumed == 4
    assert resumed.metrics["cost"]["total_usd"] == pytest.approx(12 * ROW_USD)
    assert resumed.metrics["budget"]["stopped"] is False


async def test_a_declined_estimate_leaves_the_run_pending(workspace: Callable[..., Path]) -> None:
    config = _config(workspace, n_rows=5)
    seen: list[CostEstimate] = []

    def decline(estimate: CostEstimate) -> bool:
        seen.append(estimate)
        return False

    async with ScriptedPolicyServer(_with_usage) as policy:
        plan = _plan(config, policy.url, None)
        result = await run_session(plan, confirm=decline)
    assert [e.pending for e in seen] == [4]
    assert seen[0].total_usd == pytest.approx(4 * ROW_USD)
    assert "estimated cost of the 4 pending work item(s)" in seen[0].describe()
    assert result.stop_code == "declined"
    assert result.succeeded == 1
    assert result.pending == 4


async def test_a_budget_without_a_price_stops_after_the_probe(
    workspace: Callable[..., Path],
) -> None:
    config = workspace(n_rows=4)  # no [pricing] for a model on 127.0.0.1: cost unknown
    async with ScriptedPolicyServer(_with_usage) as policy:
        result = await run_session(_plan(config, policy.url, 1.0))
    assert result.stop_code == "budget"
    assert result.halt_reason is not None
    assert "cannot be enforced" in result.halt_reason
    assert result.succeeded == 1
    assert result.pending == 3


def test_the_budget_comes_from_the_config_and_must_be_positive(
    workspace: Callable[..., Path],
) -> None:
    config = _config(workspace, n_rows=2, evaluation="max_cost_usd = 2.5\n")
    assert build_plan(config, EvalOptions(model="mock")).knobs.max_cost == 2.5
    assert build_plan(config, EvalOptions(model="mock", max_cost=1.0)).knobs.max_cost == 1.0
    with pytest.raises(EvalPlanError, match="--max-cost"):
        build_plan(config, EvalOptions(model="mock", max_cost=0.0))
