"""The budget's admission rule and estimate (:mod:`osmosis_ai.eval._impl.cost.budget`), without a run."""

from __future__ import annotations

import pytest

from osmosis_ai.eval._impl.cost.budget import Budget


def _cost(usd: float | None) -> dict[str, object]:
    cost: dict[str, object] = {"policy_usd": usd, "judge_usd": 0.0, "total_usd": usd}
    if usd is None:
        cost["unknown_reason"] = "no price known for model 'x'"
    return cost


def test_admission_reserves_the_per_row_estimate_for_rows_in_flight() -> None:
    budget = Budget.from_prior(1.0, [_cost(0.2)])  # one earlier row: $0.20 per row
    assert budget.prior_rows == 1
    assert [budget.admit() for _ in range(5)] == [True, True, True, True, False]
    assert budget.stopped  # 0.2 spent + 4 x 0.2 reserved; a fifth would pass $1
    budget.settle(_cost(0.2))
    assert not budget.admit()  # refused once, refused for good
    assert budget.spent_usd == pytest.approx(0.4)


def test_no_budget_admits_everything_and_still_estimates() -> None:
    budget = Budget.from_prior(None, [])
    assert all(budget.admit() for _ in range(100))
    budget.settle(_cost(0.5))
    budget.settle(None)  # a row that called no model costs nothing
    estimate = budget.make_estimate(pending=10, probes=2)
    assert estimate.per_row_usd == pytest.approx(0.5)
    assert estimate.total_usd == pytest.approx(5.0)
    assert "2 probe row(s)" in estimate.describe()


def test_an_unknown_cost_makes_the_budget_unenforceable() -> None:
    budget = Budget.from_prior(1.0, [_cost(None)])
    assert not budget.admit()
    assert "cannot be enforced" in budget.stop_message()
    assert budget.make_estimate(pending=3, probes=0).total_usd is None
    assert "unknown" in budget.make_estimate(pending=3, probes=0).describe()


def test_the_budget_block_of_metrics() -> None:
    budget = Budget.from_prior(2.0, [_cost(1.0), _cost(1.5)])
    assert budget.exhausted
    assert not budget.admit()
    block = budget.to_json()
    assert block["max_cost_usd"] == 2.0
    assert block["spent_usd"] == pytest.approx(2.5)
    assert block["stopped"] is True
    assert "cost budget reached: $2.5000 spent of --max-cost $2.0000" in budget.stop_message()
