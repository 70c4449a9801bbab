from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osmosis_ai.eval._impl.results.metrics import (
    ItemResult,
    MetricTotals,
    compute_metrics,
    k_values,
    pass_at_k,
)


def _brute_force(n: int, c: int, k: int) -> float:
    """Fraction of k-subsets of n attempts (c passing) that contain a pass."""
    attempts = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(attempts[i] for i in s) for s in subsets) / len(subsets)


@given(
    st.integers(1, 9).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n)))
)
def test_pass_at_k_is_the_unbiased_estimator(case: tuple[int, int, int]) -> None:
    n, c, k = case
    assert math.isclose(pass_at_k(n, c, k), _brute_force(n, c, k), abs_tol=1e-12)


def test_pass_at_k_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="pass@k"):
        pass_at_k(2, 3, 1)
    with pytest.raises(ValueError, match="pass@k"):
        pass_at_k(2, 1, 3)


def test_k_values_are_powers_of_two_and_n_itself() -> None:
    assert k_values(1) == [1]
    assert k_values(6) == [1, 2, 4, 6]  # pass@n: did any of the row's samples pass
    assert k_values(8) == [1, 2, 4, 8]
    assert k_values(3) == [1, 2, 3]


def test_failures_never_count_as_reward_zero() -> None:
    results = [
        ItemResult(0, 0, "success", 1.0, tokens=10),
        ItemResult(0, 1, "success", 0.0, tokens=10),
        ItemResult(1, 0, "failed", error_type="http_error"),
        ItemResult(1, 1, "failed", error_type="agent_error"),
        ItemResult(2, 0, "skipped"),
    ]
    summary = compute_metrics(results, samples_per_row=2, pass_threshold=1.0, total_work_items=6)
    assert summary["reward_stats"] == {
        "mean": 0.5,
        "median": 0.5,
        "std": 0.5,
        "min": 0.0,
        "max": 1.0,
    }
    assert summary["graded"] == 2
    assert summary["passed"] == 1
    assert summary["pass_rate"] == 0.5
    assert summary["failed"] == 2
    assert summary["skipped"] == 1
    assert summary["agent_failures"] == 1
    assert summary["infrastructure_failures"] == 1
    assert summary["failures_by_type"] == {"agent_error": 1, "http_error": 1}
    assert summary["tokens_used"] == 20
    assert summary["total_work_items"] == 6
    # row 0 has 2 graded attempts (1 pass); row 1 has none, so it does not enter pass@k.
    assert summary["pass_at_k"] == [
        {"k": 1, "value": 0.5, "rows": 1},
        {"k": 2, "value": 1.0, "rows": 1},
    ]


def test_threshold_and_empty_run() -> None:
    results = [ItemResult(0, 0, "success", 0.7), ItemResult(1, 0, "success", 0.2)]
    assert compute_metrics(results, samples_per_row=1, pass_threshold=0.5)["pass_rate"] == 0.5
    empty = compute_metrics([], samples_per_row=1, pass_threshold=1.0)
    assert empty["pass_rate"] is None
    assert empty["reward_stats"]["mean"] is None
    assert "pass_at_k" not in empty


def test_judge_failures_are_counted_apart_and_judge_usage_totalled() -> None:
    from osmosis_ai.eval._impl.results.metrics import ItemResult, compute_metrics

    judge = {"calls": 1, "failed_calls": 0, "prompt_tokens": 100, "completion_tokens": 10}
    failed_judge = {"calls": 1, "failed_calls": 1, "prompt_tokens": 0, "completion_tokens": 0}
    items = [
        ItemResult(0, 0, "success", 1.0, tokens=50, judge=judge),
        ItemResult(1, 0, "success", 0.0, tokens=50, judge=judge),
        ItemResult(2, 0, "failed", None, tokens=50, error_type="judge_error", judge=failed_judge),
        ItemResult(3, 0, "failed", None, tokens=5, error_type="agent_error"),
        ItemResult(4, 0, "failed", None, error_type="http_error"),
    ]
    summary = compute_metrics(items, samples_per_row=1, pass_threshold=1.0)
    assert summary["graded"] == 2
    assert summary["reward_stats"]["mean"] == 0.5  # the judge failure is not a 0
    assert summary["pass_rate"] == 0.5
    assert (summary["agent_failures"], summary["judge_failures"]) == (1, 1)
    assert summary["infrastructure_failures"] == 1
    assert summary["tokens_used"] == 155  # policy tokens only
    assert summary["judge"] == {
        "calls": 3,
        "failed_calls": 1,
        "prompt_tokens": 200,
        "completion_tokens": 20,
        "total_tokens": 220,
    }


def test_run_figures_read_the_summary_compute_metrics_writes() -> None:
    from osmosis_ai.eval._impl.results.metrics import RunFigures

    items = [ItemResult(0, 0, "success", 1.0), ItemResult(0, 1, "success", 0.0)]
    items.append(ItemResult(1, 0, "failed", None, error_type="timeout"))
    summary = compute_metrics(items, samples_per_row=2, pass_threshold=1.0)
    figures = RunFigures.of(summary)
    assert (figures.graded, figures.passed, figures.failed) == (2, 1, 1)
    assert (figures.mean_reward, figures.pass_rate) == (0.5, 0.5)
    assert figures.failures_by_type == {"timeout": 1}
    assert [p["k"] for p in figures.pass_at_k] == [1, 2]
    # a run without metrics.json yet, or a hand-edited one: nothing is invented
    assert RunFigures.of({}) == RunFigures()
    assert RunFigures.of({"reward_stats": {"mean": "high"}, "graded": True}).mean_reward is None


def test_closed_rows_keep_a_count_per_pair_and_the_same_pass_at_k() -> None:
    """A finalisation closes each dataset row once its samples are in (issue 39): what is held
    per row then is a count per (graded, passed) pair, bounded whatever the number of rows, and
    every figure is the one compute_metrics gives."""
    n = 3
    items = [
        ItemResult(row, run, "success", float((row // 3 + run) % (row % 4 + 1) == 0))
        if (row + run) % 5
        else ItemResult(row, run, "failed", error_type="agent_error")
        for row in range(400)
        for run in range(n)
    ]
    expected = compute_metrics(items, samples_per_row=n, pass_threshold=1.0)
    totals = MetricTotals(samples_per_row=n, pass_threshold=1.0)
    for row in range(400):
        for item in items[row * n : (row + 1) * n]:
            totals.add(item)
        totals.close_row(row)
    assert totals.per_row == {}
    assert len(totals.closed_rows) <= (n + 1) ** 2
    assert sum(totals.closed_rows.values()) == 400
    assert totals.summary() == expected
