"""The live status text of ``osmosis eval run``: what the bar and ``--plain`` lines say."""

from __future__ import annotations

from osmosis_ai.eval import EvalProgress, RowRecord
from osmosis_ai.eval._impl.adaptive import AdaptiveLimit
from osmosis_cli.commands.eval_run_progress import _stats, _status_line


def _progress() -> EvalProgress:
    progress = EvalProgress(run_name="r", model="m", rollout="x", rows=3, n=1, total=3)
    progress.count(RowRecord(0, 0, 0, "success", reward=1.0, policy_calls=2))
    progress.count(RowRecord(1, 0, 1, "failed", policy_calls=1))
    return progress


def test_stats_count_the_model_calls_made_apart_from_those_in_flight() -> None:
    progress = _progress()
    assert progress.policy_calls == 3
    assert _stats(progress) == "mean reward 1.000 · failed 1 · model calls 3"

    limit = AdaptiveLimit(8)
    limit.in_flight = 2
    limit.limit = 6.0
    progress.policy_limit = limit
    assert _stats(progress, retries=4) == (
        "mean reward 1.000 · failed 1 · upstream retries 4 · model calls 3 · "
        "in flight 2 (limit 6 of 8)"
    )
    assert _status_line(progress).startswith("2/3 done · mean reward 1.000")
