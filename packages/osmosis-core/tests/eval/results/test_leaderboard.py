"""The benchmark leaderboard: the unbiased pass@k, the Wilson interval and the tie rule, each
checked against numbers worked out by hand."""

from __future__ import annotations

from math import sqrt

import pytest

from osmosis_ai.eval import TaskOutcome, build_leaderboard, pass_at_k

Z = 1.959963984540054


def _wilson(c: int, n: int) -> tuple[float, float]:
    p = c / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    # n=5, c=2: pass@1 = 2/5; pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10; pass@4 = 1 (n-c < k)
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k(5, 2, 4) == 1.0
    assert pass_at_k(5, 0, 5) == 0.0
    with pytest.raises(ValueError, match="k <= n"):
        pass_at_k(2, 1, 3)


def _tasks(*passed: int, attempts: int = 4) -> list[TaskOutcome]:
    return [TaskOutcome(f"t{i}", attempts, c) for i, c in enumerate(passed)]


def test_overlapping_intervals_share_rank_one_and_the_rest_use_competition_ranks() -> None:
    board = build_leaderboard(
        {
            "a": _tasks(4, 4, 3),  # 11/12
            "b": _tasks(4, 3, 2),  # 9/12: overlaps a
            "c": _tasks(1, 0, 0),  # 1/12: does not
            "d": _tasks(0, 1, 0),  # 1/12: same pass@1 as c, same rank
            "e": [TaskOutcome("t0", 0, 0)],  # nothing graded: unranked, last
        }
    )
    by = {s.agent: s for s in board}
    assert [s.agent for s in board] == ["a", "b", "c", "d", "e"]
    a_low, a_high = _wilson(11, 12)
    b_low, b_high = _wilson(9, 12)
    _, c_high = _wilson(1, 12)
    assert (by["a"].ci_low, by["a"].ci_high) == pytest.approx((a_low, a_high))
    assert (by["b"].ci_low, by["b"].ci_high) == pytest.approx((b_low, b_high))
    assert b_high >= a_low > c_high  # by hand: b overlaps the best, c does not
    assert [(s.rank, s.tied) for s in board] == [
        (1, True), (1, True), (3, False), (3, False), (None, False)]  # fmt: skip
    assert by["a"].pass_at_1 == pytest.approx((1 + 1 + 0.75) / 3)
    # pass@4 per task: 1 when any of the 4 passed
    assert by["c"].pass_at_k[-1] == {"k": 4, "value": pytest.approx(1 / 3), "tasks": 3}
    assert by["e"].as_dict()["pass_at_1"] == {"value": None, "ci_low": None, "ci_high": None,
                                               "n": 0}  # fmt: skip


def test_a_single_agent_is_first_and_not_tied() -> None:
    (only,) = build_leaderboard({"solo": _tasks(2, 2, attempts=2)})
    assert (only.rank, only.tied, only.pass_at_1) == (1, False, 1.0)


def test_equal_pass_at_1_is_ordered_by_pass_at_k_then_name() -> None:
    board = build_leaderboard({"x": _tasks(2, 0), "y": _tasks(1, 1), "w": _tasks(1, 1)})
    # all pass@1 = 0.25; pass@4: x = 1/2, y = w = 1 -> w, y (names) then x
    assert [s.agent for s in board] == ["w", "y", "x"]
    assert all(s.rank == 1 and s.tied for s in board)
