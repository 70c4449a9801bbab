"""``RolloutSample.json_safe_copy()`` CPU per call (prints figures, never asserts).

    uv run python benchmarks/sample_json_safe.py [--calls 200000]

Every finished rollout's sample goes through ``json_safe_copy`` before it is encoded for the
wire and the trajectory. Printed, in microseconds per call, for samples whose ``metrics`` and
``extra_fields`` are:

* ``empty``: nothing to walk (the samples most workflows produce);
* ``typical``: a handful of finite float and int metrics, a small nested ``extra_fields``;
* ``large``: 200 metrics and a nested ``extra_fields`` with lists (a heavy telemetry sample);
* ``needs-fix``: ``typical`` plus one NaN nested two levels deep and one integer key (the path
  where a copy has to be made).

The first three need no change (the common path); compare runs on one machine.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from osmosis_ai.rollout.types import RolloutSample

MESSAGES = [
    {"role": "user", "content": "What is 6 * 7?"},
    {"role": "assistant", "content": "#### 42"},
]


def samples() -> dict[str, RolloutSample]:
    typical_metrics: dict[str, Any] = {
        "latency_sec": 1.25,
        "turns": 3,
        "tool_calls": 2,
        "prompt_tokens": 412,
        "completion_tokens": 96,
        "pass": True,
    }
    typical_extra: dict[str, Any] = {"model": "osmosis-rollout", "usage": {"total_tokens": 508}}
    large_metrics = {f"metric_{i}": i * 0.5 for i in range(200)}
    large_extra: dict[str, Any] = {
        "per_turn": [{"turn": i, "reward": 0.1 * i, "tokens": [1, 2, 3]} for i in range(40)],
        "tags": ["a", "b", "c"],
    }
    broken_metrics = {**typical_metrics, "nested": {"inner": {"ok": 1.0, "bad": float("nan")}}}
    broken = RolloutSample(messages=MESSAGES, reward=1.0, metrics=broken_metrics)
    broken.extra_fields.update(typical_extra)
    broken.extra_fields[7] = "seven"  # type: ignore[index] # mutated in place, as users do
    return {
        "empty": RolloutSample(messages=MESSAGES, reward=1.0),
        "typical": RolloutSample(
            messages=MESSAGES, reward=1.0, metrics=typical_metrics, extra_fields=typical_extra
        ),
        "large": RolloutSample(
            messages=MESSAGES, reward=1.0, metrics=large_metrics, extra_fields=large_extra
        ),
        "needs-fix": broken,
    }


def per_call_us(sample: RolloutSample, calls: int) -> float:
    best = float("inf")
    for _ in range(5):  # best of five: the machine is shared
        started = time.process_time()
        for _ in range(calls):
            sample.json_safe_copy()
        best = min(best, time.process_time() - started)
    return 1e6 * best / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()
    import logging

    logging.disable(logging.WARNING)  # the needs-fix sample warns on every call
    for name, sample in samples().items():
        calls = args.calls if name != "large" else max(args.calls // 20, 100)
        print(f"json_safe_copy {name:10} {per_call_us(sample, calls):8.2f} us/call", flush=True)


if __name__ == "__main__":
    main()
