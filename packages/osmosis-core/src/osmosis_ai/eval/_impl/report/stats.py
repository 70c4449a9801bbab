"""Confidence intervals: the mean reward, the pass rate and a paired difference of means.

* Mean reward: Student-t interval ``mean ± t(0.975, n-1) * s / sqrt(n)``.
* Pass rate: Wilson score interval (well behaved at 0 % and 100 %, unlike the normal one).
* Paired difference (``eval compare``): percentile bootstrap of the mean of per-row differences
  with a fixed seed, so the same two runs always print the same interval. When the differences
  take few distinct values (binary rewards give -1, 0, 1) each resample is drawn as multinomial
  counts over those values, which is exact and costs O(distinct) instead of O(n).
"""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter
from dataclasses import dataclass

Z95 = 1.959963984540054
# two-sided 95 % Student-t quantiles for 1..30 degrees of freedom
_T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240917
_MULTINOMIAL_MAX_DISTINCT = 64


@dataclass(frozen=True, slots=True)
class Interval:
    estimate: float
    low: float
    high: float
    n: int

    def as_dict(self) -> dict[str, float | int]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "n": self.n}


def _t95(df: int) -> float:
    if df <= 0:
        return math.inf
    if df <= len(_T95):
        return _T95[df - 1]
    # Cornish-Fisher style correction: within 0.001 of the exact quantile for df > 30
    return Z95 + (Z95**3 + Z95) / (4 * df)


def score_range(values: list[float]) -> tuple[float, float]:
    """The range a reward or score can take: ``[0, 1]`` (the convention), widened to the values
    when they leave it. A mean's interval never reaches past it (a t-interval of rewards near 1
    otherwise claims a mean above the maximum reward)."""
    return (min(0.0, *values), max(1.0, *values)) if values else (0.0, 1.0)


def mean_interval(
    values: list[float], *, clip: tuple[float, float] | None = None
) -> Interval | None:
    """95 % t-interval of the mean (``None`` without values; zero width for one value),
    clipped to ``clip`` (e.g. :func:`score_range`) when given."""
    if not values:
        return None
    mean = math.fsum(values) / len(values)
    if len(values) == 1:
        return Interval(mean, mean, mean, 1)
    half = _t95(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    low, high = mean - half, mean + half
    if clip is not None:
        low, high = max(clip[0], low), min(clip[1], high)
    return Interval(mean, low, high, len(values))


def wilson_interval(successes: int, n: int) -> Interval | None:
    """95 % Wilson score interval of a proportion."""
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denom
    return Interval(p, max(0.0, centre - half), min(1.0, centre + half), n)


def _bootstrap_means(diffs: list[float], resamples: int, rng: random.Random) -> list[float]:
    n = len(diffs)
    counts = Counter(diffs)
    if len(counts) <= _MULTINOMIAL_MAX_DISTINCT:
        values = list(counts)
        probs = [counts[v] / n for v in values]
        means: list[float] = []
        for _ in range(resamples):
            remaining, left, total = n, 1.0, 0.0
            for value, p in zip(values[:-1], probs[:-1], strict=True):
                drawn = rng.binomialvariate(remaining, min(1.0, p / left)) if remaining else 0
                total += drawn * value
                remaining -= drawn
                left -= p
            total += remaining * values[-1]
            means.append(total / n)
        return means
    return [math.fsum(rng.choices(diffs, k=n)) / n for _ in range(resamples)]


def paired_bootstrap(
    diffs: list[float], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> Interval | None:
    """95 % percentile-bootstrap interval of the mean of paired differences."""
    if not diffs:
        return None
    mean = math.fsum(diffs) / len(diffs)
    if len(diffs) == 1:
        return Interval(mean, mean, mean, 1)
    means = sorted(_bootstrap_means(diffs, resamples, random.Random(seed)))
    low = means[int(0.025 * (resamples - 1))]
    high = means[math.ceil(0.975 * (resamples - 1))]
    return Interval(mean, low, high, len(diffs))
