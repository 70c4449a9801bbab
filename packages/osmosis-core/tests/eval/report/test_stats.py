from __future__ import annotations

import random
import statistics

import pytest

from osmosis_ai.eval.report import mean_interval, paired_bootstrap, wilson_interval


def test_wilson_interval_matches_the_textbook_values() -> None:
    interval = wilson_interval(8, 10)
    assert interval is not None
    assert (interval.low, interval.high) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    zero = wilson_interval(0, 10)
    assert zero is not None
    assert zero.low == 0.0
    assert zero.high == pytest.approx(0.2775, abs=1e-4)
    assert wilson_interval(0, 0) is None


def test_mean_interval_is_a_t_interval() -> None:
    interval = mean_interval([1.0, 2.0, 3.0, 4.0])
    assert interval is not None
    half = 3.182 * statistics.stdev([1.0, 2.0, 3.0, 4.0]) / 2
    assert (interval.low, interval.high) == pytest.approx((2.5 - half, 2.5 + half))
    single = mean_interval([0.5])
    assert single is not None
    assert (single.low, single.high) == (0.5, 0.5)
    assert mean_interval([]) is None


def test_paired_bootstrap_is_reproducible_and_brackets_the_mean() -> None:
    diffs = [1.0] * 30 + [0.0] * 60 + [-1.0] * 10
    first, second = paired_bootstrap(diffs), paired_bootstrap(diffs)
    assert first == second
    assert first is not None
    assert first.estimate == pytest.approx(0.2)
    # normal approximation: 0.2 +- 1.96 * sd / sqrt(n)
    half = 1.96 * statistics.pstdev(diffs) / 10
    assert first.low == pytest.approx(0.2 - half, abs=0.03)
    assert first.high == pytest.approx(0.2 + half, abs=0.03)


def test_the_multinomial_and_the_resampling_paths_agree() -> None:
    rng = random.Random(1)
    few = [rng.choice([-1.0, 0.0, 0.5, 1.0]) for _ in range(400)]  # multinomial path
    many = [v + rng.uniform(-1e-9, 1e-9) for v in few]  # every value distinct: resampling
    a, b = paired_bootstrap(few), paired_bootstrap(many)
    assert a is not None
    assert b is not None
    assert a.low == pytest.approx(b.low, abs=0.02)
    assert a.high == pytest.approx(b.high, abs=0.02)


def test_the_mean_interval_never_leaves_the_score_range() -> None:
    from osmosis_ai.eval.report import score_range

    rewards = [1.0, 1.0, 1.0, 0.5, 1.0]  # unclipped: 0.586 - 1.081, past the maximum reward
    unclipped = mean_interval(rewards)
    assert unclipped is not None
    assert unclipped.high > 1.0
    clipped = mean_interval(rewards, clip=score_range(rewards))
    assert clipped is not None
    assert (clipped.low, clipped.high) == (unclipped.low, 1.0)
    assert score_range([-2.0, 0.5]) == (-2.0, 1.0)
