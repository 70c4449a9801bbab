"""The one backoff schedule (:class:`osmosis_ai._util.backoff.Backoff`)."""

from __future__ import annotations

import random

import pytest

from osmosis_ai._util.backoff import Backoff


def test_the_schedule_doubles_up_to_the_cap() -> None:
    backoff = Backoff(0.5, cap=4.0, jitter="none")
    assert [backoff.delay(n) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


def test_a_multiplier_and_an_uncapped_schedule() -> None:
    assert [Backoff(0.1, multiplier=5, jitter="none").delay(n) for n in (1, 2)] == [0.1, 0.5]
    assert Backoff(1.0, jitter="none").delay(10_000) > 1e18  # no overflow, no cap


@pytest.mark.parametrize("retry", [1, 2, 5, 40])
def test_equal_jitter_stays_between_half_and_all_of_the_delay(retry: int) -> None:
    backoff = Backoff(0.5, cap=8.0, rng=random.Random(7))
    full = backoff.full(retry)
    for _ in range(200):
        assert full / 2 <= backoff.delay(retry) <= full


def test_jitter_never_touches_the_global_random_state() -> None:
    random.seed(1234)
    expected = random.random()
    random.seed(1234)
    for retry in range(1, 20):
        Backoff(0.5, cap=8.0).delay(retry)
    assert random.random() == expected


def test_a_seeded_generator_gives_the_same_delays() -> None:
    first = [Backoff(1.0, rng=random.Random(3)).delay(n) for n in range(1, 5)]
    second = [Backoff(1.0, rng=random.Random(3)).delay(n) for n in range(1, 5)]
    assert first == second
